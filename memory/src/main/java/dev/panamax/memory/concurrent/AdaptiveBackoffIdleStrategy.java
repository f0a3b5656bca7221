package dev.panamax.memory.concurrent;

import dev.panamax.memory.internal.Libc;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * Spins, then yields, then parks briefly, the phases measured in time since the wait went idle, and stops
 * spinning for a while when spinning got this thread preempted: for a thread that waits on flags other
 * processes set (nothing wakes a parked thread across processes, so parks stay short). Where the writers of those
 * flags ring a {@link Doorbell} (or any {@link WakeSignal}), {@link #idle(WakeSignal)} sleeps on it instead of parking,
 * until a write wakes it.
 *
 * <p>Spinning pays when the thread we wait for is on a CPU: its write arrives within a microsecond, and a
 * yield would only add a system call. It costs when the CPUs are contended (ranks outnumber the cores, or
 * another process competes): a spinning thread keeps the one it waits for, or another that needs the CPU,
 * off it, and a 50 us spin becomes the latency of every step. A host with more ranks than CPUs
 * ({@code oversubscribed}) therefore never spins. Otherwise a wait spins up to {@link #SPIN_NANOS}, and a
 * spin that lasts past {@link #CHECKED_SPIN_NANOS} reads this thread's count of involuntary context
 * switches ({@code getrusage}) when it passes that mark, and again when it gives way to yielding or, for a wait
 * served while spinning, at the next wait's first idle: not as the wait ends, which is the path from the peer's write
 * to this rank's next step (the read is a system call, 1-1.5 us in a virtual machine, as long as a clock read there).
 * If the kernel switched the thread off its CPU in between (while it spun, or while it ran between the two waits),
 * someone else wanted that CPU, and for a penalty period ({@link #MIN_PENALTY_NANOS} from when that was found, doubling
 * while the next spin is preempted again, up to {@link #MAX_PENALTY_NANOS}) waits spin only
 * {@link #PENALIZED_SPIN_NANOS} before they yield: long enough for a peer that is running (a yield is a system call of
 * 1-2 us in a virtual machine, and a penalty begun between two phases of a program would otherwise make each of its
 * next waits that long), too short to keep anyone off the CPU for long, and short of the mark (no switch count read);
 * such a wait teaches no spin either.
 * Short spins, the common case when the peer is running, make no system call.
 * Where the count is unavailable (not Linux) only the oversubscription decides. Oversubscribed, a wait whose
 * yields keep finding no other thread to run sleeps on its wake signal instead (see {@link #idle(WakeSignal)}).
 *
 * <p>In waits the caller allows it ({@link #allowLongerSpin(boolean)}), the spin lengthens where waits typically
 * outlast it but no one else wants the CPU: a step of a large message that waits while the peer copies or reduces its
 * part. A wait that ended while yielding, within {@link #MAX_SPIN_NANOS}, and whose yields never switched to another
 * thread (the involuntary-switch count, read when the spin ended and when the wait did, did not move: each yield found
 * the CPU free and came straight back) would have been served as well by spinning, without a system call per round;
 * the spin of later such waits moves halfway towards 1.5 times its length. Waits served spinning pull it back slowly
 * towards twice their length, never below {@link #SPIN_NANOS}; a yield that let another thread run, a preempted spin,
 * or a wait that reached the parking phase puts it back to {@link #SPIN_NANOS} at once. So ranks that share a CPU,
 * which hand it to each other by yielding, never learn a longer spin.
 *
 * <p>Two simpler rules were measured and dropped (docs/results/performance.md): a budget learned from
 * whether waits ended while spinning (which could shrink it to nothing), and any involuntary switch (yields
 * included) marking the CPU contended. Both let two ranks that yield at once end up on one CPU, handing it to
 * each other on every step (3-5 us per 8-byte all-reduce instead of 0.6), and stay there.
 *
 * <p>A wait is {@link #reset()} (its start; again whenever it made progress) ... {@link #idle()} ...
 * {@link #waitEnded()}, which counts it; a caller that needs no counts may leave that out. Not
 * thread-safe: one waiting thread at a time.
 */
public final class AdaptiveBackoffIdleStrategy implements IdleStrategy {
    /** The phases of a wait, in order. */
    public enum Phase { SPINNING, YIELDING, PARKING }

    /** How long a wait spins while the CPU is not contended, at least (and at first). */
    public static final long SPIN_NANOS = 50_000;
    /** The longest spin learned from waits that yielded on a free CPU. */
    public static final long MAX_SPIN_NANOS = 500_000;
    /**
     * How long a wait that woke a sleeping peer spins where it would yield ({@link #idle(WakeSignal, boolean)}): the
     * peer's sleep left its CPU idle, so it mostly wakes there, in tens of microseconds (about 90 on a virtual
     * machine), longer than the spin of a wait in a preempted spin's penalty or even the full spin, while a yield
     * hands this CPU to whatever else runs on it (a CPU-bound process) until the scheduler's next tick, milliseconds
     * in which the woken peer waits for this rank (docs/results/performance.md). A peer woken onto this CPU instead
     * waits at most this long.
     */
    public static final long WOKEN_PEER_SPIN_NANOS = 250_000;
    /** How long a wait yields before it parks. */
    public static final long YIELD_NANOS = 2_000_000;
    /**
     * How long a wait yields before it parks when the ranks outnumber the CPUs (yields are its only way to
     * let the rank it waits for run).
     */
    public static final long OVERSUBSCRIBED_YIELD_NANOS = 20_000_000;
    /** How long each park of the last phase lasts. */
    public static final long PARK_NANOS = 20_000;
    /** A spin this long reads the involuntary-switch count (at this mark and at its end). */
    public static final long CHECKED_SPIN_NANOS = 5_000;
    /** How long waits spin only {@link #PENALIZED_SPIN_NANOS} after a spin was preempted, at first. */
    public static final long MIN_PENALTY_NANOS = 10_000_000;
    /** How long a wait spins during a penalty before it yields (shorter than {@link #CHECKED_SPIN_NANOS}). */
    public static final long PENALIZED_SPIN_NANOS = 2_000;
    /** The longest penalty, reached by doubling while spins keep being preempted. */
    public static final long MAX_PENALTY_NANOS = 1_000_000_000;
    /** The longest sleep on a wake signal: a wait still checks its peers and its deadline this often. */
    public static final long SLEEP_NANOS = 1_000_000;
    /**
     * Read the clock every few rounds: it costs about as much as a poll (a power of two; a caller's own loop around a
     * spinning wait reads it as rarely).
     */
    public static final int CLOCK_EVERY = 8;
    /** A yield that returned within this found no other thread to run on this CPU. */
    public static final long UNSWITCHED_YIELD_NANOS = 2_000;
    /**
     * Where ranks outnumber the CPUs, this many yields in a row that found no other thread to run make the wait sleep
     * on its wake signal: this rank has a CPU to itself while the others crowd the other CPUs (see
     * {@link #idle(WakeSignal)}).
     */
    public static final int UNSWITCHED_YIELDS_BEFORE_SLEEP = 8;
    /**
     * The least time between two such sleeps: where the kernel does not move a rank over, the lone rank pays a
     * wake-up at most this often rather than on every call.
     */
    public static final long UNSWITCHED_SLEEP_GAP_NANOS = 2_000_000;

    private final LongSupplier nanoClock;
    private final LongSupplier involuntarySwitches;
    private final boolean oversubscribed;
    private final long yieldNanos;
    /**
     * The spin of the wait in progress (0, {@link #PENALIZED_SPIN_NANOS}, {@link #SPIN_NANOS} or the learned one),
     * chosen at its first idle.
     */
    private long spinNanos;
    /** Whether the wait in progress began in a penalty: it neither learns nor teaches a spin. */
    private boolean penalized;
    /**
     * The spin a wait that allows it gets while the CPU is not contended: {@link #SPIN_NANOS} up to
     * {@link #MAX_SPIN_NANOS}.
     */
    private long learnedSpinNanos = SPIN_NANOS;
    /** Whether the wait in progress may spin {@link #learnedSpinNanos} and teach it; until {@link #waitEnded()}. */
    private boolean longerSpinAllowed;
    private int rounds;
    /** Whether the wait in progress has idled at all (for the counts). */
    private boolean idled;
    /** Whether the wait in progress (since its reset) has read the clock: {@link #idleSince} is its start. */
    private boolean clocked;
    private long idleSince;
    /** The latest clock reading of the wait in progress. */
    private long lastNow;
    private Phase phase = Phase.SPINNING;
    /**
     * The switch count when the latest spin passed {@link #CHECKED_SPIN_NANOS}; -1 before, and once that spin was
     * judged (when it gave way to yielding, or at the first idle after it ended).
     */
    private long switchesAtMark = -1;
    /** The switch count when the wait in progress stopped spinning and began to yield; -1 before or unknown. */
    private long switchesAtYield = -1;
    /** Until when waits yield at once (a spin was preempted). */
    private long noSpinUntil;
    private long penaltyNanos = MIN_PENALTY_NANOS;
    private long preemptedSpins;
    private long waits;
    private long servedSpinning;
    private long spins;
    private long yields;
    private long parks;
    private long sleeps;
    private long wokenSleeps;
    private long cpuMoves;
    /** The signal armed by the wait in progress, disarmed when it ends or progresses; null when none. */
    private WakeSignal armed;
    /**
     * The latest yields in a row that found no other thread to run, across waits: they tell how this CPU is shared,
     * which outlasts a wait (a rank alone on its CPU yields about ten times a call, but progress on each peer's arrival
     * restarts its wait's phases).
     */
    private int unswitchedYields;
    /**
     * When the latest sleep after such a run began (a clock reading); before the first, one gap before construction,
     * so that the first run may sleep at once.
     */
    private long unswitchedSleepAt;

    /**
     * @param oversubscribed true when the host runs more waiting threads than CPUs: never spin, and yield
     *                       {@value #OVERSUBSCRIBED_YIELD_NANOS} ns before parking
     */
    public AdaptiveBackoffIdleStrategy(boolean oversubscribed) {
        this(oversubscribed, System::nanoTime, threadSwitchCounter());
    }

    /** As the public constructor, with the clock and the calling thread's switch count given (for tests). */
    AdaptiveBackoffIdleStrategy(boolean oversubscribed, LongSupplier nanoClock, LongSupplier involuntarySwitches) {
        this.nanoClock = nanoClock;
        this.involuntarySwitches = involuntarySwitches;
        this.oversubscribed = oversubscribed;
        this.yieldNanos = oversubscribed ? OVERSUBSCRIBED_YIELD_NANOS : YIELD_NANOS;
        this.spinNanos = oversubscribed ? 0 : SPIN_NANOS;
        long now = nanoClock.getAsLong();
        this.noSpinUntil = now;
        this.unswitchedSleepAt = now - UNSWITCHED_SLEEP_GAP_NANOS;
    }

    private static LongSupplier threadSwitchCounter() {
        MemorySegment buffer = Arena.ofAuto().allocate(Libc.RUSAGE_BYTES, 8);
        return () -> Libc.involuntaryContextSwitches(buffer);
    }

    /**
     * Starts a wait, or starts it over after progress: the next idle begins with the spin again. A spin that passed
     * the mark is judged at that idle (see the class comment), so this makes no system call and reads the clock only
     * where a wait that allows a longer spin ended while yielding.
     */
    @Override
    public void reset() {
        if (armed != null) {
            armed.disarm();
            armed = null;
        }
        if (clocked && longerSpinAllowed) {
            learn();
        }
        clocked = false;
        switchesAtYield = -1;
        rounds = 0;
        phase = Phase.SPINNING;
    }

    /**
     * The wait in progress ended (or progressed): adjusts the spin later waits get by how this one went (see the class
     * comment). A wait that ended while spinning is timed by the latest clock reading (at most {@link #CLOCK_EVERY}
     * rounds old, which only makes it shorter); one that ended while yielding reads the clock and the switch count.
     */
    private void learn() {
        if (oversubscribed || penalized) {
            return;
        }
        switch (phase) {
            case SPINNING -> {
                long target = Math.max(SPIN_NANOS, 2 * (lastNow - idleSince));
                if (spinNanos > 0 && target < learnedSpinNanos) {
                    learnedSpinNanos -= (learnedSpinNanos - target) >> 4;
                }
            }
            case YIELDING -> {
                long length = nanoClock.getAsLong() - idleSince;
                long switches = switchesAtYield < 0 ? -1 : involuntarySwitches.getAsLong();
                if (switches >= 0 && switches == switchesAtYield && spinNanos > 0 && length <= MAX_SPIN_NANOS) {
                    long target = Math.min(MAX_SPIN_NANOS, length + length / 2);
                    learnedSpinNanos = Math.max(learnedSpinNanos, (learnedSpinNanos + target + 1) / 2);
                } else {
                    learnedSpinNanos = SPIN_NANOS;
                }
            }
            case PARKING -> learnedSpinNanos = SPIN_NANOS;
        }
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
        idleIn(advance());
    }

    private void idleIn(Phase p) {
        switch (p) {
            case SPINNING -> {
                spins++;
                Thread.onSpinWait();
            }
            case YIELDING -> {
                yields++;
                Thread.yield();
            }
            case PARKING -> {
                parks++;
                LockSupport.parkNanos(PARK_NANOS);
            }
        }
    }

    /**
     * Idles once, sleeping on {@code bell} where {@link #idle()} would park: everything the caller waits for signals
     * {@code bell} (a doorbell rung after a write, an RDMA completion channel), so a wait that outlasted the spin and
     * the yields sleeps until that wakes it, instead of waking every {@link #PARK_NANOS} to poll. The caller polls
     * between two calls: the first of a sleep arms the bell, the next sleeps (up to {@link #SLEEP_NANOS}) unless the
     * bell was signalled since. {@link #reset()} and {@link #waitEnded()} disarm it. With a null {@code bell}, as
     * {@link #idle()}. Where ranks outnumber the CPUs it also sleeps after a run of yields that found the CPU free
     * ({@link #UNSWITCHED_YIELDS_BEFORE_SLEEP}; see {@link #yieldOrArm}).
     *
     * <p>Why not sooner, measured on 2 CPUs (docs/results/performance.md): sleeping at once instead of yielding
     * when the ranks outnumber the CPUs made 8 B-32 KiB all-reduces 5-14x slower (a futex wake-up costs tens of
     * microseconds there, a yield hands the CPU over at once), and sleeping right after the spin let the wake-ups
     * pull both ranks onto one CPU (p50 0.7 to 2 us, stalls of milliseconds). Sleeping instead of yielding while a
     * preempted spin's penalty lasts (another process busy on the CPUs) changed nothing that held in a second run.
     */
    public void idle(WakeSignal bell) {
        idle(bell, false);
    }

    /**
     * As {@link #idle(WakeSignal)}, but spins where it would yield if {@code spinInstead}: the caller knows that a
     * yield cannot let the thread it waits for run sooner (it woke that thread from a sleep, see
     * {@link #WOKEN_PEER_SPIN_NANOS}). The phases still advance by time: the wait sleeps when the yields would end.
     * Ignored where the ranks outnumber the CPUs, whose yields are how the others run.
     */
    public void idle(WakeSignal bell, boolean spinInstead) {
        Phase p = advance();
        if (spinInstead && p == Phase.YIELDING && !oversubscribed && !(bell != null && bell.isArmed())) {
            idleIn(Phase.SPINNING);
            return;
        }
        if (bell == null) {
            idleIn(p);
        } else if (bell.isArmed()) {
            // armed by the idle before (parking, or a run of yields that found the CPU free); the caller has polled
            sleeps++;
            if (bell.sleep(SLEEP_NANOS)) {
                wokenSleeps++;
            }
        } else if (p == Phase.PARKING) {
            arm(bell);
        } else if (p == Phase.YIELDING && oversubscribed) {
            yieldOrArm(bell);
        } else {
            idleIn(p);
        }
    }

    private void arm(WakeSignal bell) {
        armed = bell;
        bell.arm();
    }

    /**
     * A yield, where ranks outnumber the CPUs; when it ends a run of {@link #UNSWITCHED_YIELDS_BEFORE_SLEEP} yields
     * that found no other thread to run, the wait also arms {@code bell}, and its next idle sleeps on it until a peer's
     * write rings it. Four ranks on two CPUs sometimes settle three on one CPU and one on the other, where the lone
     * rank's yields come straight back (it has nobody to hand its CPU to) and the three others take turns, three
     * switches a call instead of one; since the lone rank never leaves the run queue, the scheduler did not move one of
     * the three for the rest of a run (docs/results/performance.md: 17-25 us per 8-byte all-reduce instead of 9-12).
     * Asleep, it leaves its CPU idle, and the kernel moves a waiting rank over, mostly at once. Such sleeps are at
     * least {@link #UNSWITCHED_SLEEP_GAP_NANOS} apart, so that a rank the kernel leaves alone anyway does not pay a
     * wake-up (tens of microseconds in a virtual machine) on every call.
     */
    private void yieldOrArm(WakeSignal bell) {
        long before = nanoClock.getAsLong();
        yields++;
        Thread.yield();
        long after = nanoClock.getAsLong();
        if (after - before >= UNSWITCHED_YIELD_NANOS) {
            unswitchedYields = 0;
        } else if (++unswitchedYields >= UNSWITCHED_YIELDS_BEFORE_SLEEP) {
            unswitchedYields = 0;
            if (after - unswitchedSleepAt >= UNSWITCHED_SLEEP_GAP_NANOS) {
                unswitchedSleepAt = after;
                arm(bell);
            }
        }
    }

    /**
     * Idles once by spinning, however long the wait has lasted: for a thread that has a CPU to itself (bound to a
     * core no other thread needs), which loses nothing by spinning and would lose a time slice to whatever else
     * runs there by yielding or sleeping. Counted as {@link #idle()} counts a spin.
     */
    public void spin() {
        if (rounds++ == 0) {
            idled = true;
            phase = Phase.SPINNING;
        }
        idleIn(Phase.SPINNING);
    }

    /** The phase of this idle: reads the clock every few rounds and moves on when the phase's time is up. */
    private Phase advance() {
        if ((rounds++ & (CLOCK_EVERY - 1)) == 0) {
            long now = nanoClock.getAsLong();
            lastNow = now;
            if (rounds == 1) {
                idleSince = now;
                idled = true;
                clocked = true;
                if (switchesAtMark >= 0) {
                    spinEnded(now); // the spin of the wait before, or of this one before its progress
                }
                penalized = inPenalty(now);
                spinNanos = oversubscribed ? 0 : penalized ? PENALIZED_SPIN_NANOS
                        : longerSpinAllowed ? learnedSpinNanos : SPIN_NANOS;
            }
            long idle = now - idleSince;
            Phase next = idle < spinNanos ? Phase.SPINNING : idle < spinNanos + yieldNanos ? Phase.YIELDING
                    : Phase.PARKING;
            if (next == Phase.SPINNING && idle >= CHECKED_SPIN_NANOS && switchesAtMark < 0) {
                switchesAtMark = involuntarySwitches.getAsLong();
            } else if (next != Phase.SPINNING && phase == Phase.SPINNING) {
                boolean marked = switchesAtMark >= 0;
                long switches = spinEnded(now);
                if (next == Phase.YIELDING && spinNanos > 0 && longerSpinAllowed && !penalized) {
                    // The count the yields are judged by: none when the spin was preempted (it learns nothing).
                    switchesAtYield = marked ? switches : involuntarySwitches.getAsLong();
                }
            }
            phase = next;
        }
        return phase;
    }

    /**
     * A spin is over (it gave way to yielding, or the wait ended or progressed and this is the next idle): if it passed
     * the mark and this thread was switched off its CPU since, stop spinning for the penalty period, from {@code now}.
     * Returns the switch count it read, or -1 when it read none, the count is unavailable, or the spin was preempted.
     */
    private long spinEnded(long now) {
        if (switchesAtMark < 0) {
            return -1;
        }
        long switches = involuntarySwitches.getAsLong();
        if (switches > switchesAtMark) {
            preemptedSpins++;
            noSpinUntil = now + penaltyNanos;
            penaltyNanos = Math.min(MAX_PENALTY_NANOS, 2 * penaltyNanos);
            learnedSpinNanos = SPIN_NANOS;
            switches = -1;
        } else if (switches >= 0) {
            penaltyNanos = MIN_PENALTY_NANOS;
        }
        switchesAtMark = -1;
        return switches;
    }

    /**
     * Lets the wait in progress, until {@link #waitEnded()}, spin longer than {@link #SPIN_NANOS} if earlier such waits
     * taught it to, and teach it (see the class comment); call before its first idle. Off by default: measured to pay
     * where a shared-memory peer copies or reduces a large message's part, not (yet) for network peers.
     */
    public void allowLongerSpin(boolean allowed) {
        longerSpinAllowed = allowed;
    }

    /** The wait in progress is over: counts it (if it idled) and readies the next one. */
    public void waitEnded() {
        if (idled) {
            idled = false;
            waits++;
            if (phase == Phase.SPINNING && spinNanos > 0) {
                servedSpinning++;
            }
        }
        reset();
        longerSpinAllowed = false;
    }

    /**
     * Whether waits spin only {@link #PENALIZED_SPIN_NANOS} at {@code now} (a clock reading) because a spin was
     * preempted lately.
     */
    public boolean inPenalty(long now) {
        return !oversubscribed && now - noSpinUntil < 0;
    }

    /**
     * The caller moved this thread off a CPU it shared with the thread it waits for: counts the move, ends the
     * penalty in progress, if any, whose cause that was, and starts the wait in progress over with the spin. A next
     * preempted spin starts a penalty twice as long.
     */
    public void movedOffSharedCpu() {
        cpuMoves++;
        noSpinUntil = nanoClock.getAsLong();
        // The wait starts over on the new CPU, with the spin: had it gone on yielding, its first idle there would hand
        // the new CPU to whatever else runs on it (a CPU-bound process) until the scheduler's next tick.
        switchesAtMark = -1;
        switchesAtYield = -1;
        clocked = false;
        rounds = 0;
        phase = Phase.SPINNING;
    }

    /** The spin a next wait that allows a longer one gets, unless oversubscribed or in a preempted spin's penalty. */
    long learnedSpinNanos() {
        return learnedSpinNanos;
    }

    /** The phase of the next idle, as decided at the last reading of the clock. */
    public Phase phase() {
        return phase;
    }

    /** What this strategy has done so far; may be read racily from other threads (monitoring only). */
    public Counts counts() {
        return new Counts(spinNanos, waits, servedSpinning, spins, yields, parks, sleeps, wokenSleeps,
                preemptedSpins, cpuMoves);
    }

    @Override
    public String toString() {
        return "adaptiveBackoff(spin " + SPIN_NANOS + " ns (" + learnedSpinNanos + " ns learned, in waits that allow "
                + "it) unless a spin was preempted lately, yield " + yieldNanos + " ns, then park " + PARK_NANOS
                + " ns)";
    }

    /**
     * Running totals of one strategy, read from plain fields the waiting thread writes (a read from another
     * thread may be stale or mix two moments).
     *
     * @param spinNanos      how long the latest wait could spin (0 when oversubscribed, {@link #PENALIZED_SPIN_NANOS}
     *                       in a penalty; learned, see the class comment)
     * @param waits          waits that idled at least once
     * @param servedSpinning of those, the waits that ended in the spin phase
     * @param spins          idles spent spinning ({@link Thread#onSpinWait()})
     * @param yields         idles spent yielding ({@link Thread#yield()})
     * @param parks          idles spent parking, {@link #PARK_NANOS} ns each
     * @param sleeps         idles spent asleep on a wake signal ({@link #idle(WakeSignal)}), up to {@link #SLEEP_NANOS}
     *                       each
     * @param wokenSleeps    of those, the sleeps a ring ended (the others ran into their timeout)
     * @param preemptedSpins spins during which the thread was switched off its CPU, or between their end and the next
     *                       wait (each began a penalty; a wait served spinning is counted at the next wait's first
     *                       idle)
     * @param cpuMoves       moves of the thread off a CPU it shared with the thread it waited for
     *                       ({@link #movedOffSharedCpu()})
     */
    public record Counts(long spinNanos, long waits, long servedSpinning, long spins, long yields, long parks,
                         long sleeps, long wokenSleeps, long preemptedSpins, long cpuMoves) {
        @Override
        public String toString() {
            return String.format(Locale.ROOT, "spin %.1f us; waits %d (served spinning %d), spins %d, yields %d, "
                    + "parks %d, sleeps %d (woken %d), preempted spins %d, CPU moves %d", spinNanos / 1e3, waits,
                    servedSpinning, spins, yields, parks, sleeps, wokenSleeps, preemptedSpins, cpuMoves);
        }
    }
}
