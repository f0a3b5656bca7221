/**
 * The CUDA driver API and NCCL, both loaded lazily. The entry points are {@link dev.panamax.cuda.Cuda} (is CUDA
 * there, which devices) and {@link dev.panamax.cuda.Nccl} (is NCCL there, unique ids). A
 * {@link dev.panamax.cuda.CudaDevice} retains its primary {@link dev.panamax.cuda.CudaContext}, which makes
 * streams, events, {@link dev.panamax.cuda.DeviceMemory} and {@link dev.panamax.cuda.PinnedMemory} and opens
 * IPC handles; {@link dev.panamax.cuda.ReductionKernels#load} loads the GPU reduction kernels into a context and
 * {@link dev.panamax.cuda.NcclCommunicator#create} makes an NCCL communicator on one.
 */
package dev.panamax.cuda;
