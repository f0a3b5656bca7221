package dev.panamax.ml.internal;

import dev.panamax.ml.SharedVariable.Reduction;

import java.lang.foreign.MemorySegment;

/** The state of one shared variable in this process: its settings and its current round. */
public final class SharedSlot {
    private final SharedCoordinator coordinator;
    private final String key;
    private final int numTasks;
    private final Reduction reduction;

    // Guarded by this; lock order: slot, then round.
    private SharedRound current;
    private long nextNumber;
    private boolean closed;

    SharedSlot(SharedCoordinator coordinator, String key, int numTasks, Reduction reduction) {
        this.coordinator = coordinator;
        this.key = key;
        this.numTasks = numTasks;
        this.reduction = reduction;
    }

    public String key() {
        return key;
    }

    public int numTasks() {
        return numTasks;
    }

    public Reduction reduction() {
        return reduction;
    }

    SharedCoordinator coordinator() {
        return coordinator;
    }

    /** Adds a vector to the current round, beginning a new round when the last one has ended. */
    public SharedRound commit(MemorySegment vector) {
        SharedRound round;
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("shared variable '" + key + "' is closed");
            }
            if (current == null || current.isClosedToCommits()) {
                current = new SharedRound(this, nextNumber++);
            }
            round = current;
            round.accept(vector);
        }
        return round;
    }

    /** The latest round (see {@code SharedVariable.latest}). */
    public synchronized SharedRound latest() {
        if (current == null) {
            throw new IllegalStateException("shared variable '" + key + "' has no round yet: no task has committed");
        }
        return current;
    }

    /** True when this slot would accept an {@code init} with these settings. */
    boolean matches(int numTasks, Reduction reduction) {
        if (numTasks != this.numTasks) {
            return false;
        }
        // Functions are compared by kind only: every task of a process may pass its own lambda.
        return reduction instanceof Reduction.Operator ? reduction.equals(this.reduction)
                : reduction.getClass() == this.reduction.getClass();
    }

    /** Stops the variable; a round still collecting fails. */
    public void close() {
        SharedRound open;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            open = current;
        }
        coordinator.remove(this);
        if (open != null) {
            open.failIfCollecting(new IllegalStateException("shared variable '" + key + "' was closed"));
        }
    }

    @Override
    public String toString() {
        return "SharedVariable[key=" + key + ", numTasks=" + numTasks + ", reduction=" + reduction + "]";
    }
}
