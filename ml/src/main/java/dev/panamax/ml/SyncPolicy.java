package dev.panamax.ml;

/** How a {@link GradientSynchronizer} schedules the gradient all-reduces of one iteration ([ASC-WFBP]). */
public enum SyncPolicy {
    /** Wait-free back-propagation: each tensor is all-reduced on its own as soon as it is ready and the previous one is
     * done. */
    WFBP,
    /** WFBP with tensor fusion: consecutive tensors are merged into one all-reduce where the model says that saves
     * time. */
    MG_WFBP,
    /** MG-WFBP plus simultaneous all-reduces where the model says that saves more ([ASC-WFBP]). */
    ASC_WFBP
}
