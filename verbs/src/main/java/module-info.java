/** RDMA over libibverbs. */
module dev.panamax.verbs {
    requires transitive dev.panamax.memory;
}
