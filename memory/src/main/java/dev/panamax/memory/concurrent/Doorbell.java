package dev.panamax.memory.concurrent;

import dev.panamax.memory.internal.Libc;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * A 32-bit word in memory, possibly shared with other processes, on which one thread sleeps until another
 * thread or process rings it: a Linux futex. It lets a thread that waits for flags other processes write
 * sleep in the kernel and be woken by the write itself, instead of yielding its CPU away for a time slice or
 * waking on a timer.
 *
 * <p>The word is 1 while its owner is armed (about to sleep, or asleep), 0 otherwise. The sleeper
 * {@link #arm()}s, polls what it waits for once more, and {@link #sleep}s only if that poll found nothing; a
 * writer stores what the sleeper waits for, then {@link #ring()}s: a full fence, then a read of the word, and a
 * system call only when it is armed. The sleeper's store of the word precedes its poll's loads and the writer's
 * store precedes its read of the word, so at least one sees the other's: either the poll finds the write or the
 * ring finds the sleeper armed, clears the word and wakes it (a wake before the sleep makes the sleep return
 * at once, the word no longer being 1). A writer that finds nobody armed pays the fence and one read of a
 * cache line that stays shared.
 *
 * <p>One object per side: the sleeper's (one thread at a time sleeps on a word) and each writer's (one thread
 * at a time rings through one object; rings through different objects over the same word are fine). Where
 * futexes are unavailable ({@link #isSupported()} false) nobody should sleep on one; {@link #ring()} then does
 * nothing.
 */
public final class Doorbell implements WakeSignal {
    /** The bytes of memory a doorbell takes: one 4-byte aligned int. */
    public static final long BYTES = 4;
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();
    private static final boolean SUPPORTED = Libc.hasFutex();

    private final MemorySegment word;
    /** Scratch of the futex calls (timeout, errno), allocated at the first sleep or wake. */
    private MemorySegment timespec;
    private MemorySegment callState;
    private boolean armed;

    /** A doorbell over the first {@link #BYTES} bytes of {@code word}, which must be 4-byte aligned. */
    public Doorbell(MemorySegment word) {
        if (word.byteSize() < BYTES || word.address() % BYTES != 0) {
            throw new IllegalArgumentException("a doorbell needs 4 bytes at a 4-byte aligned address, got "
                    + word.byteSize() + " bytes at 0x" + Long.toHexString(word.address()));
        }
        this.word = word.asSlice(0, BYTES);
    }

    /** Whether threads can sleep on doorbells here (futexes: Linux on x86-64 or arm64). */
    public static boolean isSupported() {
        return SUPPORTED;
    }

    /** Sleeper: marks the owner about to sleep; poll once more before {@link #sleep}ing. */
    @Override
    public void arm() {
        INT.setVolatile(word, 0L, 1);
        VarHandle.fullFence(); // the poll that follows must not read before this store is visible
        armed = true;
    }

    /** Sleeper: whether {@link #arm()} was called since the last sleep or disarm. */
    @Override
    public boolean isArmed() {
        return armed;
    }

    /** Sleeper: no longer about to sleep (the wait ended or made progress); writers stop making system calls. */
    @Override
    public void disarm() {
        if (armed) {
            armed = false;
            INT.setRelease(word, 0L, 0);
        }
    }

    /**
     * Sleeper, armed: sleeps until a writer rings, at most {@code timeoutNanos} (or returns at once when one
     * rang since {@link #arm()}). Disarms. Returns false when it slept the whole timeout and no writer rang before
     * it disarmed: a ring that came as the timeout ran out, while this thread waited for a CPU to run on again,
     * still counts (on two busy CPUs that took most of the rings in a test whose peer was slow).
     */
    @Override
    public boolean sleep(long timeoutNanos) {
        if (!armed) {
            throw new IllegalStateException("sleep without arm: a write before the arm would be missed");
        }
        if (timespec == null) {
            allocateScratch();
        }
        int rc = Libc.futexWait(word, 1, timeoutNanos, timespec, callState);
        boolean rung = rc != Libc.ETIMEDOUT || (int) INT.getVolatile(word, 0L) == 0; // only a ring clears the word
        disarm();
        return rung;
    }

    /** Writer, after its store: wakes the sleeper if it is armed; returns whether it was. */
    public boolean ring() {
        VarHandle.fullFence();
        if ((int) INT.getVolatile(word, 0L) != 0 && INT.compareAndSet(word, 0L, 1, 0) && SUPPORTED) {
            if (callState == null) {
                allocateScratch();
            }
            Libc.futexWake(word, Integer.MAX_VALUE, callState);
            return true;
        }
        return false;
    }

    private void allocateScratch() {
        Arena arena = Arena.ofAuto();
        timespec = arena.allocate(Libc.TIMESPEC_BYTES, 8);
        callState = Libc.allocateCallState(arena);
    }

    @Override
    public String toString() {
        return "doorbell@0x" + Long.toHexString(word.address()) + (armed ? " (armed)" : "");
    }
}
