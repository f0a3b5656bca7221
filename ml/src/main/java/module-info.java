/** Machine-learning support: gradient all-reduces overlapped with back-propagation, and task-based shared variables. */
module dev.panamax.ml {
    requires transitive dev.panamax.collectives;
    exports dev.panamax.ml;
    exports dev.panamax.ml.shared;
}
