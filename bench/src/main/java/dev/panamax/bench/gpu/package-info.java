/**
 * The GPU all-reduce benchmark ({@link dev.panamax.bench.gpu.GpuAllReduceBench}): float32 all-reduce on device
 * memory through the library's GPU communicator, with its own stages over CUDA IPC or with NCCL, printed like
 * nccl-tests; it launches its own rank processes. The GPU bundle ({@code scripts/gpu/gpu-check}) runs it.
 */
package dev.panamax.bench.gpu;
