/**
 * jextract-generated FFM bindings for libibverbs, the CUDA driver API and NCCL, with hand-written
 * companions and lazy library loading ({@link dev.panamax.bindings.NativeLibrary}).
 */
module dev.panamax.bindings {
    exports dev.panamax.bindings;
    exports dev.panamax.bindings.verbs;
    exports dev.panamax.bindings.verbs.support;
    exports dev.panamax.bindings.cuda;
    exports dev.panamax.bindings.cuda.support;
    exports dev.panamax.bindings.nccl;
    exports dev.panamax.bindings.nccl.support;
}
