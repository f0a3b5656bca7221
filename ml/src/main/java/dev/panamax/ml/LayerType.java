package dev.panamax.ml;

/**
 * How one gradient tensor is communicated ([ASC-WFBP] definitions 1-3). Tensors are indexed in
 * backward order: tensor 0 becomes ready first.
 */
public enum LayerType {
    /** All-reduced on its own, after the previous all-reduce is done. */
    NORMAL,
    /** Merged into the next tensor's all-reduce (copied into a fusion buffer); the last tensor is never merged. */
    MERGED,
    /**
     * All-reduced at the same time as the previous all-reduce
     * ({@link dev.panamax.collectives.Communicator#allReduceConcurrently}): both start together, once
     * both are ready.
     */
    SIMULTANEOUS
}
