package dev.panamax.verbs;

import dev.panamax.verbs.internal.BackoffIdleStrategy;
import dev.panamax.verbs.internal.BusySpinIdleStrategy;

/**
 * What a polling loop does when a poll found nothing. {@link #idle(int)} is called after each poll with the
 * amount of work it found; {@link #reset()} when work arrived. Instances keep state: one per polling thread.
 */
public interface IdleStrategy {
    /** Called after a poll that found {@code workCount} items; idles when it is 0, resets otherwise. */
    void idle(int workCount);

    /** Forget past idling: the next idle starts again from the cheapest step. */
    void reset();

    /**
     * Busy spins first, then spins with {@link Thread#onSpinWait()}, then yields, then parks for a period
     * that doubles from 1 us up to 1 ms (as Agrona's {@code BackoffIdleStrategy}).
     */
    static IdleStrategy backoff() {
        return new BackoffIdleStrategy(BackoffIdleStrategy.DEFAULT_SPINS, BackoffIdleStrategy.DEFAULT_SPIN_WAITS,
                BackoffIdleStrategy.DEFAULT_YIELDS, BackoffIdleStrategy.DEFAULT_MIN_PARK_NANOS,
                BackoffIdleStrategy.DEFAULT_MAX_PARK_NANOS);
    }

    /**
     * {@link #backoff()} with the given number of steps in each phase and park period bounds.
     *
     * @param spins         idles that return at once (a tight poll loop)
     * @param spinWaits     idles that call {@link Thread#onSpinWait()}
     * @param yields        idles that call {@link Thread#yield()}
     * @param minParkNanos  the first park period
     * @param maxParkNanos  the cap of the doubling park period
     */
    static IdleStrategy backoff(int spins, int spinWaits, int yields, long minParkNanos, long maxParkNanos) {
        return new BackoffIdleStrategy(spins, spinWaits, yields, minParkNanos, maxParkNanos);
    }

    /** Always {@link Thread#onSpinWait()}: lowest latency, one core busy. */
    static IdleStrategy busySpin() {
        return BusySpinIdleStrategy.INSTANCE;
    }
}
