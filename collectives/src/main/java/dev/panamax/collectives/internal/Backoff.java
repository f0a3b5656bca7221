package dev.panamax.collectives.internal;

import java.util.concurrent.locks.LockSupport;

/**
 * Idle strategy for waits: spin briefly (a shared-memory flag crosses cores in well under a
 * microsecond), then yield (the CPUs may be oversubscribed), then park with growing sleeps.
 * Reset it whenever work was done. Not thread-safe; one per waiting thread.
 */
final class Backoff {
    private static final int SPINS = 2_000;
    private static final int YIELDS = 200;
    private static final long MIN_PARK_NANOS = 1_000;
    private static final long MAX_PARK_NANOS = 200_000;

    private int idleRounds;
    private long parkNanos = MIN_PARK_NANOS;

    void reset() {
        idleRounds = 0;
        parkNanos = MIN_PARK_NANOS;
    }

    void idle() {
        int r = idleRounds++;
        if (r < SPINS) {
            Thread.onSpinWait();
        } else if (r < SPINS + YIELDS) {
            Thread.yield();
        } else {
            LockSupport.parkNanos(parkNanos);
            parkNanos = Math.min(parkNanos * 2, MAX_PARK_NANOS);
        }
    }
}
