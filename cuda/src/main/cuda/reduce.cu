// Element-wise reduction kernels for the GPU, the device counterpart of
// dev.panamax.memory.Reductions (accumulate and divide), with the same results bit for bit
// (NaN payloads aside).
//
// Built to PTX by scripts/gpu/build-ptx (target compute_80: A100, H100, H200 and newer); the PTX is
// committed as cuda/src/main/resources/dev/panamax/cuda/reduce.ptx and loaded with
// cuModuleLoadData, so no CUDA toolkit is needed to build or run Panamax.
//
// Entry points (C linkage, for cuModuleGetFunction):
//   panamax_reduce_<op>_<type>(T* inout, const T* in, unsigned long long count)
//       inout[i] = inout[i] op in[i] for i < count
//   panamax_divide_<type>(T* inout, unsigned long long count, int divisor)
//       inout[i] = inout[i] / divisor, the end of an AVG (divisor >= 1; the host checks it)
//   op:   sum, prod, min, max
//   type: f32, f64, f16, bf16, i32, i64, i8, u8 (f16/bf16 as their 16-bit storage)
//
// Pointers need only be element-aligned. `in` and `inout` must be disjoint or the same range.
// When both have the same address modulo 16, the middle of the range runs on 16-byte loads and
// stores and the few elements at either end one at a time; otherwise every element is scalar.
//
// Launch configuration (kernels are compiled for at most kBlockSize threads per block):
//   block = 256 threads (1-D)
//   grid  = max(1, ceil(count / (256 * 16 / elementBytes))), capped at 8 * multiprocessorCount while
//           two operands fit in the L2 cache (ReductionKernels.gridSize)
//   dynamic shared memory 0; any stream. count 0 may be launched (it does nothing) or skipped.
// The loops are grid-stride, so any grid of at least one block gives the full result; the rule
// above gives each thread one 16-byte pack, and for operands in L2 caps the grid at a full GPU
// (8 blocks of 256 = 2048 threads, the maximum resident per multiprocessor on sm_80 and sm_90;
// __launch_bounds__(256, 8) keeps every kernel within the 32 registers that allows), whose threads
// then loop. Two or four packs in flight per thread were no faster on an H200.
//
// Semantics, as the host kernels (ScalarKernels, Half):
//   integers: two's complement, SUM and PROD wrap; i8 compares signed, u8 unsigned;
//             divide truncates toward zero (u8 unsigned).
//   f32, f64: IEEE in their own precision, no fused multiply-add, no flush to zero;
//             MIN/MAX as java.lang.Math.min/max: a NaN operand gives NaN, -0.0 < +0.0.
//   f16, bf16: each result computed in float and rounded back to nearest-even (overflow gives
//             infinity); divide divides in float. NaN stays NaN (payload not preserved).

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

namespace {

constexpr int kBlockSize = 256;
// 8 x 256 = 2048 resident threads, the sm_80 and sm_90 maximum: keeps each kernel at <= 32 registers.
constexpr int kBlocksPerMultiprocessor = 8;
constexpr int kPackBytes = 16;

// ---- Element types: storage in memory, the type arithmetic happens in, and conversions. ----

template <typename S, typename C = S>
struct Plain {
    using Storage = S;
    using Compute = C;
    static __host__ __device__ __forceinline__ C load(S s) { return s; }
    static __host__ __device__ __forceinline__ S store(C c) { return c; }
};

struct F32 : Plain<float> {};
struct F64 : Plain<double> {};
struct I32 : Plain<int32_t> {};
struct I64 : Plain<int64_t> {};
struct I8 : Plain<int8_t> {};
struct U8 : Plain<uint8_t> {};

struct F16 {
    using Storage = unsigned short;
    using Compute = float;
    static __host__ __device__ __forceinline__ float load(unsigned short s) { return __half2float(__ushort_as_half(s)); }
    static __host__ __device__ __forceinline__ unsigned short store(float c) { return __half_as_ushort(__float2half_rn(c)); }
};

struct BF16 {
    using Storage = unsigned short;
    using Compute = float;
    static __host__ __device__ __forceinline__ float load(unsigned short s) { return __bfloat162float(__ushort_as_bfloat16(s)); }
    static __host__ __device__ __forceinline__ unsigned short store(float c) { return __bfloat16_as_ushort(__float2bfloat16_rn(c)); }
};

// ---- Operators on the compute type. ----

// Integer SUM and PROD in the unsigned type of the same width: wraps without undefined behaviour.
template <typename T> struct Unsigned { using type = T; };
template <> struct Unsigned<int32_t> { using type = uint32_t; };
template <> struct Unsigned<int64_t> { using type = uint64_t; };
template <> struct Unsigned<int8_t> { using type = uint8_t; };

// memcpy, not __float_as_int, so that the host check can run these too; it compiles to a move.
template <typename C, typename Bits>
__host__ __device__ __forceinline__ C combineBits(C a, C b, bool useOr) {
    Bits x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    x = useOr ? (x | y) : (x & y);
    memcpy(&a, &x, sizeof a);
    return a;
}
__host__ __device__ __forceinline__ float orBits(float a, float b) { return combineBits<float, uint32_t>(a, b, true); }
__host__ __device__ __forceinline__ float andBits(float a, float b) { return combineBits<float, uint32_t>(a, b, false); }
__host__ __device__ __forceinline__ double orBits(double a, double b) { return combineBits<double, uint64_t>(a, b, true); }
__host__ __device__ __forceinline__ double andBits(double a, double b) { return combineBits<double, uint64_t>(a, b, false); }

template <typename C>
__host__ __device__ __forceinline__ C add(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
        using U = typename Unsigned<C>::type;
        return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
        return a + b;
    }
}

template <typename C>
__host__ __device__ __forceinline__ C mul(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
        using U = typename Unsigned<C>::type;
        return static_cast<C>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    } else {
        return a * b;
    }
}

// fminf/fmaxf return the other operand for a NaN and may return either zero; Java does neither.
// Equal operands differ only for zeros, where OR of the bits picks -0.0 and AND picks +0.0;
// a + b is a NaN when either operand is. Selects, not branches: no divergence in the pack loop.
template <typename C>
__host__ __device__ __forceinline__ C minimum(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
        return b < a ? b : a;
    } else {
        const C smaller = a == b ? orBits(a, b) : (a < b ? a : b);
        return a != a || b != b ? a + b : smaller;
    }
}

template <typename C>
__host__ __device__ __forceinline__ C maximum(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
        return a < b ? b : a;
    } else {
        const C larger = a == b ? andBits(a, b) : (a > b ? a : b);
        return a != a || b != b ? a + b : larger;
    }
}

struct Sum { template <typename C> static __host__ __device__ __forceinline__ C apply(C a, C b) { return add(a, b); } };
struct Prod { template <typename C> static __host__ __device__ __forceinline__ C apply(C a, C b) { return mul(a, b); } };
struct Min { template <typename C> static __host__ __device__ __forceinline__ C apply(C a, C b) { return minimum(a, b); } };
struct Max { template <typename C> static __host__ __device__ __forceinline__ C apply(C a, C b) { return maximum(a, b); } };

// Division as the host's `x / divisor`: the int converts to the compute type (float for f32, f16
// and bf16, double for f64); integers truncate toward zero (int8/uint8 divide as int).
template <typename C>
__host__ __device__ __forceinline__ C divideBy(C x, int divisor) {
    if constexpr (std::is_integral_v<C> && sizeof(C) == 8) {
        return x / static_cast<int64_t>(divisor);
    } else if constexpr (std::is_integral_v<C>) {
        return static_cast<C>(static_cast<int32_t>(x) / divisor);
    } else {
        return x / static_cast<C>(divisor);
    }
}

// ---- The grid-stride loop shared by all kernels. ----

// 16 bytes of elements, moved as one vector load or store.
template <typename S>
union Pack {
    static constexpr int kCount = kPackBytes / sizeof(S);
    uint4 raw;
    S e[kCount];
};

// Applies f to every element of inout (and in, when kBinary): f(x, y) or f(x).
// Ranges: [0, head) scalar, [head, tailStart) in 16-byte packs, [tailStart, count) scalar.
// This thread handles indices first, first + stride, ... (stride = threads in the grid).
template <typename S, bool kBinary, typename F>
__host__ __device__ __forceinline__ void elementwise(S* inout, const S* in, unsigned long long count,
                                                     unsigned long long first, unsigned long long stride, F f) {
    constexpr unsigned long long kPerPack = Pack<S>::kCount;

    const uintptr_t misalign = reinterpret_cast<uintptr_t>(inout) % kPackBytes;
    const bool packable = !kBinary || reinterpret_cast<uintptr_t>(in) % kPackBytes == misalign;
    unsigned long long head = 0;
    unsigned long long tailStart = 0;
    if (packable) {
        head = ((kPackBytes - misalign) % kPackBytes) / sizeof(S);
        if (head > count) head = count;
        const unsigned long long packs = (count - head) / kPerPack;
        tailStart = head + packs * kPerPack;
        uint4* a = reinterpret_cast<uint4*>(inout + head);
        const uint4* b = reinterpret_cast<const uint4*>(in + head);
        for (unsigned long long p = first; p < packs; p += stride) {
            Pack<S> x;
            x.raw = a[p];
            if constexpr (kBinary) {
                Pack<S> y;
                y.raw = b[p];
#pragma unroll
                for (int k = 0; k < Pack<S>::kCount; k++) x.e[k] = f(x.e[k], y.e[k]);
            } else {
#pragma unroll
                for (int k = 0; k < Pack<S>::kCount; k++) x.e[k] = f(x.e[k]);
            }
            a[p] = x.raw;
        }
    }
    // The scalar elements: the head, then the tail (or everything when not packable).
    const unsigned long long scalars = head + (count - tailStart);
    for (unsigned long long j = first; j < scalars; j += stride) {
        const unsigned long long i = j < head ? j : tailStart + (j - head);
        if constexpr (kBinary) {
            inout[i] = f(inout[i], in[i]);
        } else {
            inout[i] = f(inout[i]);
        }
    }
}

template <typename Type, typename Op>
__host__ __device__ __forceinline__ void reduce(typename Type::Storage* inout, const typename Type::Storage* in,
                                                unsigned long long count, unsigned long long first,
                                                unsigned long long stride) {
    using S = typename Type::Storage;
    elementwise<S, true>(inout, in, count, first, stride,
                         [](S x, S y) { return Type::store(Op::apply(Type::load(x), Type::load(y))); });
}

template <typename Type>
__host__ __device__ __forceinline__ void divide(typename Type::Storage* inout, unsigned long long count, int divisor,
                                                unsigned long long first, unsigned long long stride) {
    using S = typename Type::Storage;
    elementwise<S, false>(inout, static_cast<const S*>(nullptr), count, first, stride,
                          [divisor](S x) { return Type::store(divideBy(Type::load(x), divisor)); });
}

__device__ __forceinline__ unsigned long long firstIndex() {
    return static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ unsigned long long gridThreads() {
    return static_cast<unsigned long long>(gridDim.x) * blockDim.x;
}

}  // namespace

// ---- Entry points. ----

#define PANAMAX_REDUCE(op, Op, type, Type)                                                       \
    extern "C" __global__ void __launch_bounds__(kBlockSize, kBlocksPerMultiprocessor) panamax_reduce_##op##_##type(      \
        Type::Storage* inout, const Type::Storage* in, unsigned long long count) {               \
        reduce<Type, Op>(inout, in, count, firstIndex(), gridThreads());                         \
    }

#define PANAMAX_TYPE(type, Type)                                                                 \
    PANAMAX_REDUCE(sum, Sum, type, Type)                                                         \
    PANAMAX_REDUCE(prod, Prod, type, Type)                                                       \
    PANAMAX_REDUCE(min, Min, type, Type)                                                         \
    PANAMAX_REDUCE(max, Max, type, Type)                                                         \
    extern "C" __global__ void __launch_bounds__(kBlockSize, kBlocksPerMultiprocessor) panamax_divide_##type(             \
        Type::Storage* inout, unsigned long long count, int divisor) {                           \
        divide<Type>(inout, count, divisor, firstIndex(), gridThreads());                        \
    }

PANAMAX_TYPE(f32, F32)
PANAMAX_TYPE(f64, F64)
PANAMAX_TYPE(f16, F16)
PANAMAX_TYPE(bf16, BF16)
PANAMAX_TYPE(i32, I32)
PANAMAX_TYPE(i64, I64)
PANAMAX_TYPE(i8, I8)
PANAMAX_TYPE(u8, U8)
