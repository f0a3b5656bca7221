/**
 * The GPU backends behind {@code gpu.GpuCommunicator} and {@code gpu.GpuBlueConnect}: the own
 * device stages (host schedules run on device memory through CUDA IPC, signalled through a
 * shared-memory block), NCCL, and the device operations they share (on CUDA, or emulated on host
 * memory for tests).
 */
package dev.panamax.collectives.internal.device;
