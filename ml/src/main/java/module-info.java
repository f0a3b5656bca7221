/** Machine-learning building blocks over the communicator. */
module dev.panamax.ml {
    requires transitive dev.panamax.collectives;
    exports dev.panamax.ml;
}
