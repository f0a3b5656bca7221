/** Communicator, bootstrap, transports and collective algorithms. */
module dev.panamax.collectives {
    requires transitive dev.panamax.memory;
    requires dev.panamax.verbs;
    requires dev.panamax.cuda;
    // JFR events (dev.panamax.Collective, dev.panamax.Step) and the per-communicator JMX bean.
    requires jdk.jfr;
    requires java.management;
    exports dev.panamax.collectives;
    exports dev.panamax.collectives.gpu;
    exports dev.panamax.collectives.schedule;
    exports dev.panamax.collectives.algorithms;
    exports dev.panamax.collectives.plan;
}
