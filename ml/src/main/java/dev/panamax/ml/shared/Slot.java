package dev.panamax.ml.shared;

import java.lang.foreign.MemorySegment;

/** The state of one shared variable in this process: its settings and its current round. */
final class Slot {
    private final Coordinator coordinator;
    private final String key;
    private final int numTasks;
    private final SharedReduction reduction;

    // Guarded by this; lock order: slot, then round.
    private RoundState current;
    private long nextNumber;
    private boolean closed;

    Slot(Coordinator coordinator, String key, int numTasks, SharedReduction reduction) {
        this.coordinator = coordinator;
        this.key = key;
        this.numTasks = numTasks;
        this.reduction = reduction;
    }

    String key() {
        return key;
    }

    int numTasks() {
        return numTasks;
    }

    SharedReduction reduction() {
        return reduction;
    }

    Coordinator coordinator() {
        return coordinator;
    }

    /** Adds a vector to the current round, beginning a new round when the last one has ended. */
    RoundState commit(MemorySegment vector) {
        RoundState round;
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("shared variable '" + key + "' is closed");
            }
            if (current == null || current.isClosedToCommits()) {
                current = new RoundState(this, nextNumber++);
            }
            round = current;
            round.accept(vector);
        }
        return round;
    }

    /** The latest round (see {@link SharedVariable#latest}). */
    synchronized RoundState latest() {
        if (current == null) {
            throw new IllegalStateException("shared variable '" + key + "' has no round yet: no task has committed");
        }
        return current;
    }

    /** True when this slot would accept an {@code init} with these settings. */
    boolean matches(int numTasks, SharedReduction reduction) {
        if (numTasks != this.numTasks) {
            return false;
        }
        // Functions are compared by kind only: every task of a process may pass its own lambda.
        return reduction instanceof SharedReduction.Operator ? reduction.equals(this.reduction)
                : reduction.getClass() == this.reduction.getClass();
    }

    /** Stops the variable; a round still collecting fails. */
    void close() {
        RoundState open;
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
