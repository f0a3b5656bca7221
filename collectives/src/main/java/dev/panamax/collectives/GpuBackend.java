package dev.panamax.collectives;

import dev.panamax.collectives.gpu.GpuBlueConnect;
import dev.panamax.collectives.gpu.GpuCommunicator;

/**
 * What moves the data of a collective on device memory ({@link GpuCommunicator}, and each level
 * of {@link GpuBlueConnect}).
 */
public enum GpuBackend {
    /**
     * The own device stages: the host path's ring or halving/doubling schedules, data written GPU
     * to GPU through CUDA IPC, reduced with the GPU kernels (docs/gpu-stages.md). Every rank must be
     * a process on this host; several ranks may share a device.
     */
    STAGES,
    /**
     * NCCL (libnccl.so.2, docs/nccl.md): one NCCL communicator over the ranks, its unique id made by
     * the first rank and sent over the host communicator. One device per rank (NCCL does not put
     * two ranks of a communicator on one device); ranks may be on several hosts.
     */
    NCCL
}
