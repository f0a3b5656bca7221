/**
 * The CUDA driver API: devices, primary contexts, streams, events, device memory, pinned host memory,
 * IPC handles and the GPU reduction kernels. Loads libcuda.so.1 lazily; without it {@link dev.panamax.cuda.Cuda#isAvailable()} is false.
 */
module dev.panamax.cuda {
    requires transitive dev.panamax.memory;
    requires dev.panamax.bindings;
    exports dev.panamax.cuda;
}
