/** CUDA driver API and NCCL. */
module dev.panamax.cuda {
    requires transitive dev.panamax.memory;
}
