/** jextract-generated FFM bindings (libibverbs, CUDA driver API, NCCL) and their hand-written companions. */
module dev.panamax.bindings {
}
