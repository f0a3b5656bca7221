// Lets g++ compile the CUDA C++ of cuda/src/main/cuda/reduce.cu for the host: the execution-space
// keywords become nothing, and the built-in index variables become thread-local variables that the
// caller sets before calling a kernel once per emulated thread. Included by the cuda_fp16.h and
// cuda_bf16.h of this directory, which stand in for the CUDA toolkit's.
#ifndef PANAMAX_DEVICE_SHIM_H
#define PANAMAX_DEVICE_SHIM_H

#define __host__
#define __device__
#define __global__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)

// As CUDA's vector types: uint4 is 16-byte aligned, the kernels move 16-byte packs with it.
struct __attribute__((aligned(16))) uint4 {
    unsigned int x, y, z, w;
};

struct uint3 {
    unsigned int x, y, z;
};

struct dim3 {
    unsigned int x, y, z;
};

// The index of the emulated thread: set by the launcher (see cuda_kernels.cpp) before each call.
extern thread_local uint3 threadIdx;
extern thread_local uint3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;

#endif
