// The kernels of reduce.ptx that the driver emulation can run: the same source (reduce.cu),
// compiled for the host by cuda_kernels.cpp.
#ifndef PANAMAX_CUDA_KERNELS_H
#define PANAMAX_CUDA_KERNELS_H

enum class KernelKind {
    // (T* inout, const T* in, unsigned long long count)
    Reduce,
    // (T* inout, unsigned long long count, int divisor)
    Divide,
};

struct LaunchShape {
    unsigned int grid[3];
    unsigned int block[3];
};

struct EmulatedKernel {
    const char* name;
    KernelKind kind;
    unsigned int elementBytes;
    // Runs every thread of the grid, one after another, with the kernel's arguments (host
    // addresses); `in` is unused by Divide, `divisor` by Reduce.
    void (*run)(const LaunchShape& shape, void* inout, const void* in, unsigned long long count, int divisor);
};

// The entry points of reduce.cu, in no particular order.
extern const EmulatedKernel kEmulatedKernels[];
extern const int kEmulatedKernelCount;

#endif
