package dev.panamax.memory.concurrent;

import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * Idles in phases measured in time since the wait went idle: spin (a shared-memory flag crosses cores in well
 * under a microsecond), then yield (the CPUs may be shared), then park briefly. Nothing can wake a parked rank
 * across processes, so parks stay short: a long park would become the latency of every later step. When the
 * host runs more ranks than CPUs, spinning only keeps the rank we wait for off the CPU, so the
 * {@code oversubscribed} variant yields almost at once.
 *
 * <p>Not thread-safe; one per waiting thread; {@link #reset()} whenever work was done ({@link #idle(int)} with
 * work does it). {@link IdleStrategies#timedBackoff(boolean)} makes one.
 */
public final class TimedBackoffIdleStrategy implements IdleStrategy {
    /** The phases, in order. */
    public enum Phase { SPINNING, YIELDING, PARKING }

    /** How long each park of the last phase lasts. */
    public static final long PARK_NANOS = 20_000;
    /** How long a wait spins before it yields, with a core per rank. */
    public static final long SPIN_NANOS = 50_000;
    /** How long a wait yields before it parks, with a core per rank. */
    public static final long YIELD_NANOS = 2_000_000;
    /** How long a wait spins before it yields when the ranks outnumber the CPUs. */
    public static final long OVERSUBSCRIBED_SPIN_NANOS = 2_000;
    /** How long a wait yields before it parks when the ranks outnumber the CPUs. */
    public static final long OVERSUBSCRIBED_YIELD_NANOS = 20_000_000;
    /** Read the clock only every few rounds: nanoTime costs about as much as a poll. */
    static final int CLOCK_EVERY = 64;

    private final LongSupplier nanoClock;
    private final long spinNanos;
    private final long yieldNanos;
    private int rounds;
    private long idleSince;
    private Phase phase = Phase.SPINNING;

    /**
     * @param oversubscribed true when the host runs more ranks (waiting threads) than CPUs: spin
     *                       {@value #OVERSUBSCRIBED_SPIN_NANOS} ns and yield {@value #OVERSUBSCRIBED_YIELD_NANOS}
     *                       ns instead of {@value #SPIN_NANOS} ns and {@value #YIELD_NANOS} ns
     */
    public TimedBackoffIdleStrategy(boolean oversubscribed) {
        this(oversubscribed, System::nanoTime);
    }

    /** As the public constructor, reading the time from {@code nanoClock} (for tests). */
    TimedBackoffIdleStrategy(boolean oversubscribed, LongSupplier nanoClock) {
        this.nanoClock = nanoClock;
        this.spinNanos = oversubscribed ? OVERSUBSCRIBED_SPIN_NANOS : SPIN_NANOS;
        this.yieldNanos = oversubscribed ? OVERSUBSCRIBED_YIELD_NANOS : YIELD_NANOS;
    }

    @Override
    public void reset() {
        rounds = 0;
        phase = Phase.SPINNING;
    }

    /** Idles once; work ({@code workCount > 0}) resets instead. */
    @Override
    public void idle(int workCount) {
        if (workCount > 0) {
            reset();
            return;
        }
        idle();
    }

    @Override
    public void idle() {
        if ((rounds++ & (CLOCK_EVERY - 1)) == 0) {
            long now = nanoClock.getAsLong();
            if (rounds == 1) {
                idleSince = now;
            }
            long idle = now - idleSince;
            phase = idle < spinNanos ? Phase.SPINNING : idle < spinNanos + yieldNanos ? Phase.YIELDING : Phase.PARKING;
        }
        switch (phase) {
            case SPINNING -> Thread.onSpinWait();
            case YIELDING -> Thread.yield();
            case PARKING -> LockSupport.parkNanos(PARK_NANOS);
        }
    }

    /** The phase of the next idle, as decided at the last reading of the clock. */
    public Phase phase() {
        return phase;
    }

    @Override
    public String toString() {
        return "timedBackoff(spin " + spinNanos + " ns, yield " + yieldNanos + " ns, then park " + PARK_NANOS
                + " ns)";
    }
}
