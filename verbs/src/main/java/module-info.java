/**
 * RDMA over libibverbs: devices, protection domains, memory regions, completion queues and reliable
 * connected queue pairs, with preallocated work requests for a post and poll path that does not allocate.
 */
module dev.panamax.verbs {
    requires transitive dev.panamax.memory;
    requires dev.panamax.bindings;
    exports dev.panamax.verbs;
}
