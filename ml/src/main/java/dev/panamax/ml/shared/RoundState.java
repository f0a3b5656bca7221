package dev.panamax.ml.shared;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;

/**
 * One round of a shared variable: commits are folded into an accumulator as they arrive (one
 * drain at a time, each fold chunked over the cores), then the coordinator runs the global
 * all-reduce on it in place and publishes it.
 */
final class RoundState {
    private enum State { COLLECTING, LOCAL_READY, DONE, FAILED }

    private final Slot slot;
    private final long number;

    // Guarded by this.
    private State state = State.COLLECTING;
    private long length = -1;
    private int committed;
    private int folded;
    private boolean draining;
    private final ArrayDeque<MemorySegment> pending = new ArrayDeque<>();
    private MemorySegment accumulator;
    private Throwable failure;

    RoundState(Slot slot, long number) {
        this.slot = slot;
        this.number = number;
    }

    Slot slot() {
        return slot;
    }

    long number() {
        return number;
    }

    /** The element count, fixed by the first commit. */
    synchronized long length() {
        return length;
    }

    /** The accumulator; the coordinator's alone once the round is locally ready. */
    synchronized MemorySegment accumulator() {
        return accumulator;
    }

    synchronized boolean isFinished() {
        return state == State.DONE || state == State.FAILED;
    }

    /** True when the next commit belongs to a new round: this one has ended and has all its commits. */
    synchronized boolean isClosedToCommits() {
        return state == State.DONE || (state == State.FAILED && committed >= slot.numTasks());
    }

    synchronized boolean isFailed() {
        return state == State.FAILED;
    }

    synchronized Throwable failure() {
        return failure;
    }

    /** Queues a task's vector (called with the slot's lock held). */
    void accept(MemorySegment vector) {
        long count = vector.byteSize() / slot.reduction().type().byteSize();
        boolean startDrain;
        synchronized (this) {
            if (committed == slot.numTasks()) {
                throw new IllegalStateException("commit " + (committed + 1) + " to " + this + ", which takes "
                        + slot.numTasks()
                        + " (numTasks of init) and is still reducing: more tasks commit than declared, or a task "
                        + "committed"
                        + " twice without waiting for the round's result");
            }
            if (state == State.FAILED) {
                // Still counted: the round's remaining tasks get this error, and the next commit begins a new round.
                committed++;
                throw new IllegalStateException(this + " has failed: " + failure.getMessage(), failure);
            }
            if (length < 0) {
                length = count;
            } else if (count != length) {
                throw new IllegalArgumentException("commit of " + count + " elements to " + this
                        + ", whose first commit had "
                        + length);
            }
            committed++;
            pending.add(vector);
            startDrain = !draining;
            draining = true;
        }
        if (startDrain) {
            Kernels.execute(this::drain);
        }
    }

    /** Folds queued vectors into the accumulator until the queue is empty. */
    private void drain() {
        while (true) {
            MemorySegment vector;
            boolean first;
            synchronized (this) {
                vector = pending.poll();
                if (vector == null || state == State.FAILED) {
                    pending.clear();
                    draining = false;
                    return;
                }
                first = folded == 0;
            }
            try {
                if (first) {
                    // Allocated here rather than in commit, which must not block. Native, so that the
                    // communicator and the vector kernels read it directly; freed by GC with the result.
                    long bytes = vector.byteSize();
                    MemorySegment acc = Arena.ofAuto().allocate(Math.max(1, bytes), 64).asSlice(0, bytes);
                    Kernels.copy(acc, vector);
                    synchronized (this) {
                        accumulator = acc;
                    }
                } else {
                    Kernels.fold(slot.reduction(), accumulator, vector);
                }
            } catch (RuntimeException | Error e) {
                // The other processes still take part in this round's agreement, and learn from it that it failed here.
                fail(e);
                slot.coordinator().localReady(this);
                continue;
            }
            boolean ready;
            synchronized (this) {
                folded++;
                ready = folded == slot.numTasks() && state == State.COLLECTING;
                if (ready) {
                    state = State.LOCAL_READY;
                }
            }
            if (ready) {
                slot.coordinator().localReady(this);
            }
        }
    }

    /** Publishes the result (the accumulator holds it). */
    synchronized void complete() {
        if (state == State.LOCAL_READY) {
            state = State.DONE;
            notifyAll();
        }
    }

    /** Fails the round unless it has already ended. */
    synchronized void fail(Throwable cause) {
        if (state == State.COLLECTING || state == State.LOCAL_READY) {
            state = State.FAILED;
            failure = cause;
            notifyAll();
        }
    }

    /** Fails the round only while it still collects commits (the global step, once begun, ends it). */
    synchronized void failIfCollecting(Throwable cause) {
        if (state == State.COLLECTING) {
            fail(cause);
        }
    }

    /** Waits for the result; see {@link SharedVariable.Round#get}. */
    synchronized MemorySegment await(long timeoutNanos) {
        long deadline = System.nanoTime() + Math.min(timeoutNanos, Long.MAX_VALUE / 4);
        while (state != State.DONE && state != State.FAILED) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                String where = committed < slot.numTasks()
                        ? committed + " of " + slot.numTasks() + " tasks of this process committed"
                        : folded < slot.numTasks()
                        ? "all " + slot.numTasks() + " tasks of this process committed, " + folded + " reduced so far"
                        : "all " + slot.numTasks()
                        + " tasks of this process committed; the all-reduce with the other processes has not ended";
                throw new CollectiveTimeoutException("timed out after " + timeoutNanos / 1_000_000 + " ms waiting for "
                        + this
                        + ": " + where);
            }
            try {
                wait(Math.max(1, left / 1_000_000), 0);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CollectiveException("interrupted while waiting for " + this, e);
            }
        }
        if (state == State.FAILED) {
            throw new CollectiveException(this + " failed: " + failure.getMessage(), failure);
        }
        return accumulator.asReadOnly();
    }

    @Override
    public String toString() {
        return "round " + number + " of shared variable '" + slot.key() + "'";
    }
}
