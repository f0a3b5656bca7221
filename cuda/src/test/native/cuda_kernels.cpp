// reduce.cu compiled for the host through the headers in shim/ (see panamax_device_shim.h), and
// launchers that run a grid the way the device would, minus the concurrency: every thread index,
// one after another. The kernels never synchronize or share memory between threads, so the
// result is the device's.
#include "cuda_kernels.h"

#include "../../main/cuda/reduce.cu"

thread_local uint3 threadIdx;
thread_local uint3 blockIdx;
thread_local dim3 blockDim;
thread_local dim3 gridDim;

namespace {

template <typename F>
void forEachThread(const LaunchShape& shape, F kernel) {
    gridDim = {shape.grid[0], shape.grid[1], shape.grid[2]};
    blockDim = {shape.block[0], shape.block[1], shape.block[2]};
    for (unsigned int bz = 0; bz < shape.grid[2]; bz++)
        for (unsigned int by = 0; by < shape.grid[1]; by++)
            for (unsigned int bx = 0; bx < shape.grid[0]; bx++)
                for (unsigned int tz = 0; tz < shape.block[2]; tz++)
                    for (unsigned int ty = 0; ty < shape.block[1]; ty++)
                        for (unsigned int tx = 0; tx < shape.block[0]; tx++) {
                            blockIdx = {bx, by, bz};
                            threadIdx = {tx, ty, tz};
                            kernel();
                        }
}

template <typename S, void (*K)(S*, const S*, unsigned long long)>
void runReduce(const LaunchShape& shape, void* inout, const void* in, unsigned long long count, int) {
    forEachThread(shape, [&] { K(static_cast<S*>(inout), static_cast<const S*>(in), count); });
}

template <typename S, void (*K)(S*, unsigned long long, int)>
void runDivide(const LaunchShape& shape, void* inout, const void*, unsigned long long count, int divisor) {
    forEachThread(shape, [&] { K(static_cast<S*>(inout), count, divisor); });
}

}  // namespace

#define PANAMAX_EMULATED_REDUCE(op, type, Type)                                                        \
    {"panamax_reduce_" #op "_" #type, KernelKind::Reduce, sizeof(Type::Storage),                     \
     runReduce<Type::Storage, panamax_reduce_##op##_##type>},

#define PANAMAX_EMULATED_TYPE(type, Type)                                                              \
    PANAMAX_EMULATED_REDUCE(sum, type, Type)                                                           \
    PANAMAX_EMULATED_REDUCE(prod, type, Type)                                                          \
    PANAMAX_EMULATED_REDUCE(min, type, Type)                                                           \
    PANAMAX_EMULATED_REDUCE(max, type, Type)                                                           \
    {"panamax_divide_" #type, KernelKind::Divide, sizeof(Type::Storage),                             \
     runDivide<Type::Storage, panamax_divide_##type>},

const EmulatedKernel kEmulatedKernels[] = {
    PANAMAX_EMULATED_TYPE(f32, F32)
    PANAMAX_EMULATED_TYPE(f64, F64)
    PANAMAX_EMULATED_TYPE(f16, F16)
    PANAMAX_EMULATED_TYPE(bf16, BF16)
    PANAMAX_EMULATED_TYPE(i32, I32)
    PANAMAX_EMULATED_TYPE(i64, I64)
    PANAMAX_EMULATED_TYPE(i8, I8)
    PANAMAX_EMULATED_TYPE(u8, U8)
};

const int kEmulatedKernelCount = sizeof kEmulatedKernels / sizeof kEmulatedKernels[0];
