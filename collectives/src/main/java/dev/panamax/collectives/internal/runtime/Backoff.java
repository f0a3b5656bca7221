package dev.panamax.collectives.internal.runtime;

import java.util.concurrent.locks.LockSupport;

/**
 * Idle strategy for waits, in phases measured in time since the wait went idle: spin (a
 * shared-memory flag crosses cores in well under a microsecond), then yield (the CPUs may be
 * shared), then park briefly. Nothing can wake a parked rank across processes, so parks stay short:
 * a long park would become the latency of every later step. When the host runs more ranks than
 * CPUs, spinning only keeps the rank we wait for off the CPU, so it yields almost at once.
 * Not thread-safe; one per waiting thread; {@link #reset()} whenever work was done.
 */
public final class Backoff {
    private static final long PARK_NANOS = 20_000;
    /** Read the clock only every few rounds: nanoTime costs about as much as a poll. */
    private static final int CLOCK_EVERY = 64;

    private final long spinNanos;
    private final long yieldNanos;
    private int rounds;
    private long idleSince;
    private int phase;

    public Backoff(boolean oversubscribed) {
        this.spinNanos = oversubscribed ? 2_000 : 50_000;
        this.yieldNanos = oversubscribed ? 20_000_000 : 2_000_000;
    }

    public void reset() {
        rounds = 0;
        phase = 0;
    }

    public void idle() {
        if ((rounds++ & (CLOCK_EVERY - 1)) == 0) {
            long now = System.nanoTime();
            if (rounds == 1) {
                idleSince = now;
            }
            long idle = now - idleSince;
            phase = idle < spinNanos ? 0 : idle < spinNanos + yieldNanos ? 1 : 2;
        }
        switch (phase) {
            case 0 -> Thread.onSpinWait();
            case 1 -> Thread.yield();
            default -> LockSupport.parkNanos(PARK_NANOS);
        }
    }
}
