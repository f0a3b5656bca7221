package dev.panamax.memory.concurrent;

/**
 * Something a waiting thread can sleep on until what it waits for may have happened, instead of waking on a
 * timer to poll: a {@link Doorbell} that a peer's write rings, or an RDMA completion channel that the adapter
 * signals when a completion arrives.
 *
 * <p>The protocol closes the race between the last poll and the sleep: the sleeper {@link #arm()}s, polls what it
 * waits for once more, and {@link #sleep}s only if that poll found nothing; whatever happens after the arm wakes
 * the sleep (or makes it return at once). A sleep may also return early for nothing (the caller polls and sleeps
 * again). One thread at a time sleeps on a signal.
 */
public interface WakeSignal {
    /** Readies the signal for a sleep; poll once more before {@link #sleep}ing. */
    void arm();

    /** Whether {@link #arm()} was called since the last sleep or disarm. */
    boolean isArmed();

    /** No longer about to sleep (the wait ended or made progress). */
    void disarm();

    /**
     * Armed: sleeps until what the caller waits for may have happened, at most {@code timeoutNanos}, or returns at
     * once when it may have happened since {@link #arm()}. Disarms. Returns false when it slept the whole timeout.
     */
    boolean sleep(long timeoutNanos);
}
