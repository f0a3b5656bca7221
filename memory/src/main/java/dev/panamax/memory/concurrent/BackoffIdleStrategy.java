package dev.panamax.memory.concurrent;

import java.util.concurrent.locks.LockSupport;

/**
 * Idles in four phases of growing cost, counted in idles: return at once, {@link Thread#onSpinWait()},
 * {@link Thread#yield()}, then {@link LockSupport#parkNanos} for a period that doubles from a minimum up to a
 * cap (as Agrona's {@code BackoffIdleStrategy}). Work resets it. {@link IdleStrategies#backoff()} makes one
 * with the defaults below.
 */
public final class BackoffIdleStrategy implements IdleStrategy {
    /** Idles that return at once. */
    public static final int DEFAULT_SPINS = 10;
    /** Idles that call {@link Thread#onSpinWait()}. */
    public static final int DEFAULT_SPIN_WAITS = 20;
    /** Idles that call {@link Thread#yield()}. */
    public static final int DEFAULT_YIELDS = 5;
    /** The first park period: 1 us. */
    public static final long DEFAULT_MIN_PARK_NANOS = 1_000;
    /** The cap of the doubling park period: 1 ms. */
    public static final long DEFAULT_MAX_PARK_NANOS = 1_000_000;

    /** The phases, in order. */
    public enum Phase { SPINNING, SPIN_WAITING, YIELDING, PARKING }

    private final int spins;
    private final int spinWaits;
    private final int yields;
    private final long minParkNanos;
    private final long maxParkNanos;
    private Phase phase;
    private int count;
    private long parkNanos;

    /**
     * @param spins        idles that return at once (a tight poll loop)
     * @param spinWaits    idles that call {@link Thread#onSpinWait()}
     * @param yields       idles that call {@link Thread#yield()}
     * @param minParkNanos the first park period
     * @param maxParkNanos the cap of the doubling park period
     * @throws IllegalArgumentException when a phase length is negative or not {@code 1 <= minParkNanos <=
     *                                  maxParkNanos}
     */
    public BackoffIdleStrategy(int spins, int spinWaits, int yields, long minParkNanos, long maxParkNanos) {
        if (spins < 0 || spinWaits < 0 || yields < 0) {
            throw new IllegalArgumentException("phase lengths must be >= 0: " + spins + ", " + spinWaits + ", "
                    + yields);
        }
        if (minParkNanos < 1 || maxParkNanos < minParkNanos) {
            throw new IllegalArgumentException("need 1 <= minParkNanos <= maxParkNanos: " + minParkNanos + ", "
                    + maxParkNanos);
        }
        this.spins = spins;
        this.spinWaits = spinWaits;
        this.yields = yields;
        this.minParkNanos = minParkNanos;
        this.maxParkNanos = maxParkNanos;
        reset();
    }

    @Override
    public void idle(int workCount) {
        if (workCount > 0) {
            reset();
            return;
        }
        switch (phase) {
            case SPINNING -> {
                if (++count >= spins) {
                    next(Phase.SPIN_WAITING);
                }
            }
            case SPIN_WAITING -> {
                Thread.onSpinWait();
                if (++count >= spinWaits) {
                    next(Phase.YIELDING);
                }
            }
            case YIELDING -> {
                Thread.yield();
                if (++count >= yields) {
                    next(Phase.PARKING);
                }
            }
            case PARKING -> {
                LockSupport.parkNanos(parkNanos);
                parkNanos = Math.min(parkNanos << 1, maxParkNanos);
            }
        }
    }

    /** Moves to {@code p}, skipping phases of length zero. */
    private void next(Phase p) {
        count = 0;
        phase = p;
        if (phase == Phase.SPIN_WAITING && spinWaits == 0) {
            phase = Phase.YIELDING;
        }
        if (phase == Phase.YIELDING && yields == 0) {
            phase = Phase.PARKING;
        }
    }

    @Override
    public void reset() {
        parkNanos = minParkNanos;
        count = 0;
        phase = Phase.SPINNING;
        if (spins == 0) {
            next(Phase.SPIN_WAITING);
        }
    }

    /** The phase the next {@link #idle(int)} of no work runs. */
    public Phase phase() {
        return phase;
    }

    /** The period the next park lasts. */
    public long parkNanos() {
        return parkNanos;
    }

    @Override
    public String toString() {
        return "backoff(" + spins + " spins, " + spinWaits + " spin-waits, " + yields + " yields, park "
                + minParkNanos + ".." + maxParkNanos + " ns)";
    }
}
