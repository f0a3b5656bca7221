package dev.panamax.djl;

import ai.djl.TrainingDivergedException;

/**
 * A data-parallel training step failed on this rank: an all-reduce of the gradients failed (a peer died or
 * aborted, a timeout) or a gradient could not be exchanged. It is DJL's training error type, so a loop that
 * handles a failed training handles this too; the cause says what happened, naming the peer where one failed.
 */
public class DataParallelException extends TrainingDivergedException {
    private static final long serialVersionUID = 1L;
    private final int rank;

    /** The failure {@code cause} of the gradient exchange on rank {@code rank}. */
    public DataParallelException(int rank, Throwable cause) {
        super("rank " + rank + ": the data-parallel gradient exchange failed: " + cause, cause);
        this.rank = rank;
    }

    /** The rank that threw. */
    public int rank() {
        return rank;
    }
}
