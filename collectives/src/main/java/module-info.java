/** Communicator, bootstrap, transports and collective algorithms. */
module dev.panamax.collectives {
    requires transitive dev.panamax.memory;
    requires dev.panamax.verbs;
    requires dev.panamax.cuda;
    exports dev.panamax.collectives;
}
