/** Data-parallel training support: gradient all-reduces overlapped with back-propagation. */
module dev.panamax.ml {
    requires transitive dev.panamax.collectives;
    exports dev.panamax.ml;
}
