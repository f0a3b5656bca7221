/**
 * Collectives on device memory: {@link dev.panamax.collectives.gpu.GpuCommunicator} (the host
 * path's ring and halving/doubling schedules run on GPU buffers through CUDA IPC, or NCCL) and
 * {@link dev.panamax.collectives.gpu.GpuBlueConnect} (BlueConnect with a backend per level), both
 * made over a host {@code Communicator}. Their {@code create} factories are the only way into
 * {@code internal.device}.
 */
package dev.panamax.collectives.gpu;
