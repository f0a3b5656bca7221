/**
 * Benchmarks of the CUDA layer on one GPU: {@link dev.panamax.bench.cuda.CudaBench} (the cost of a driver call
 * through FFM, pinned and device copy bandwidth, and the NCCL call cost) and
 * {@link dev.panamax.bench.cuda.ReduceBench} (the GPU reduce kernel against a device copy). The GPU bundle
 * ({@code scripts/gpu/gpu-check}) runs both.
 */
package dev.panamax.bench.cuda;
