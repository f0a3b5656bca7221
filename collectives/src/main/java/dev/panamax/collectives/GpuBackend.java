package dev.panamax.collectives;

/**
 * What moves the data of a collective on device memory: chosen per communicator by
 * {@code gpu.GpuCommunicator}, and per level by {@code gpu.GpuBlueConnect}. It lives in this
 * package, not in {@code gpu}, because the device backends inside the module choose by it too.
 */
public enum GpuBackend {
    /**
     * The own device stages: the host path's ring or halving/doubling schedules, data written GPU
     * to GPU through CUDA IPC, reduced with the GPU kernels (docs/guide/gpu-stages.md). Every rank must be
     * a process on this host; several ranks may share a device.
     */
    STAGES,
    /**
     * NCCL (libnccl.so.2, docs/reference/nccl.md): one NCCL communicator over the ranks, its unique id made by
     * the first rank and sent over the host communicator. One device per rank (NCCL does not put
     * two ranks of a communicator on one device); ranks may be on several hosts.
     */
    NCCL
}
