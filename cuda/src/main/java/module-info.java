/**
 * The CUDA driver API: devices, primary contexts, streams, events, device memory, pinned host memory,
 * IPC handles and the GPU reduction kernels. Loads libcuda.so.1 lazily; without it {@link
 * dev.panamax.cuda.Cuda#isAvailable()} is false.
 * NCCL communicators ({@link dev.panamax.cuda.NcclCommunicator}) likewise load libnccl.so.2 lazily
 * ({@link dev.panamax.cuda.Nccl#isAvailable()}).
 */
module dev.panamax.cuda {
    requires transitive dev.panamax.memory;
    requires dev.panamax.bindings;
    exports dev.panamax.cuda;
}
