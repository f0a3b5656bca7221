package dev.panamax.memory.concurrent;

/** The factories of the {@link IdleStrategy} implementations. */
public final class IdleStrategies {
    private IdleStrategies() {
    }

    /**
     * Busy spins first, then spins with {@link Thread#onSpinWait()}, then yields, then parks for a period
     * that doubles from 1 us up to 1 ms (as Agrona's {@code BackoffIdleStrategy}); the phases are counted in
     * idles ({@link BackoffIdleStrategy}).
     */
    public static IdleStrategy backoff() {
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
    public static IdleStrategy backoff(int spins, int spinWaits, int yields, long minParkNanos, long maxParkNanos) {
        return new BackoffIdleStrategy(spins, spinWaits, yields, minParkNanos, maxParkNanos);
    }

    /** Always {@link Thread#onSpinWait()}: lowest latency, one core busy. */
    public static IdleStrategy busySpin() {
        return BusySpinIdleStrategy.INSTANCE;
    }

    /**
     * Spins up to 50 us, then yields, then parks 20 us at a time, the phases measured in time since the wait
     * went idle, and yields at once for a while after a spin was preempted ({@link AdaptiveBackoffIdleStrategy}):
     * for waits on a flag another process (or a GPU) sets, which nothing can wake a parked thread for, on CPUs
     * that may be shared. {@code oversubscribed}: the host runs more waiting threads than CPUs, so never spin
     * and yield longer before parking.
     */
    public static AdaptiveBackoffIdleStrategy adaptiveBackoff(boolean oversubscribed) {
        return new AdaptiveBackoffIdleStrategy(oversubscribed);
    }
}
