package dev.panamax.collectives.internal;

import java.util.concurrent.locks.LockSupport;

/**
 * Idle strategy for waits: spin briefly (a shared-memory flag crosses cores in well under a
 * microsecond), then yield (the CPUs may be oversubscribed), then park with growing sleeps.
 * Reset it whenever work was done. Not thread-safe; one per waiting thread.
 */
final class Backoff {
    private static final long MIN_PARK_NANOS = 1_000;
    private static final long MAX_PARK_NANOS = 200_000;

    private final int spins;
    private final int yields;
    private int idleRounds;
    private long parkNanos = MIN_PARK_NANOS;

    /**
     * @param oversubscribed more ranks than CPUs on this host: spinning would only keep the peer we
     *                       wait for off the CPU, so yield almost at once, and for longer
     */
    Backoff(boolean oversubscribed) {
        this.spins = oversubscribed ? 20 : 2_000;
        this.yields = oversubscribed ? 20_000 : 200;
    }

    void reset() {
        idleRounds = 0;
        parkNanos = MIN_PARK_NANOS;
    }

    void idle() {
        int r = idleRounds++;
        if (r < spins) {
            Thread.onSpinWait();
        } else if (r < spins + yields) {
            Thread.yield();
        } else {
            LockSupport.parkNanos(parkNanos);
            parkNanos = Math.min(parkNanos * 2, MAX_PARK_NANOS);
        }
    }
}
