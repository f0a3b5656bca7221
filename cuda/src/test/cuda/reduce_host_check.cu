// Runs the element-wise code of reduce.cu on the host, emulating a launch thread by thread (the
// kernels never synchronize, so running the threads one after another gives the same result).
// Checks that every element is visited exactly once for all alignments, counts and grid sizes,
// and the edge cases of the semantics (NaN, signed zeros, wrapping, rounding, truncation).
// Built and run by scripts/gpu/build-ptx; it tests the source, not the device's instructions.
#include "../../main/cuda/reduce.cu"

#include <stdarg.h>
#include <stdio.h>

#include <initializer_list>
#include <limits>

static int failures = 0;

// A function, not a macro: template arguments contain commas.
static void check(bool ok, const char* format, ...) {
    if (ok) return;
    failures++;
    va_list args;
    va_start(args, format);
    fprintf(stderr, "FAIL ");
    vfprintf(stderr, format, args);
    fprintf(stderr, "\n");
    va_end(args);
}

template <typename Type, typename Op>
static void launchReduce(typename Type::Storage* inout, const typename Type::Storage* in, unsigned long long count,
                         unsigned long long threads) {
    for (unsigned long long t = 0; t < threads; t++) reduce<Type, Op>(inout, in, count, t, threads);
}

template <typename Type>
static void launchDivide(typename Type::Storage* inout, unsigned long long count, int divisor,
                         unsigned long long threads) {
    for (unsigned long long t = 0; t < threads; t++) divide<Type>(inout, count, divisor, t, threads);
}

// SUM of small integers (exact in every type) at element offsets 0..15 of 16-byte-aligned
// buffers: each element in range must change exactly once, the guards around it not at all.
template <typename Type>
static void coverage(const char* name) {
    using S = typename Type::Storage;
    const int slots = 16 / sizeof(S) + 1;
    for (int aOff = 0; aOff < slots; aOff++) {
        for (int bOff = 0; bOff < slots; bOff++) {
            for (unsigned long long count = 0; count <= 70; count++) {
                for (unsigned long long threads : {1ull, 3ull, 64ull}) {
                    alignas(16) S a[128], b[128];
                    for (int i = 0; i < 128; i++) {
                        a[i] = Type::store(static_cast<typename Type::Compute>(i % 7));
                        b[i] = Type::store(static_cast<typename Type::Compute>(1 + i % 5));
                    }
                    launchReduce<Type, Sum>(a + aOff, b + bOff, count, threads);
                    for (int i = 0; i < 128; i++) {
                        const bool inRange = i >= aOff && i < aOff + static_cast<int>(count);
                        const double want = i % 7 + (inRange ? 1 + (i - aOff + bOff) % 5 : 0);
                        const double got = static_cast<double>(Type::load(a[i]));
                        check(got == want, "%s coverage aOff=%d bOff=%d count=%llu threads=%llu i=%d: %g != %g",
                              name, aOff, bOff, count, threads, i, got, want);
                    }
                    alignas(16) S c[128];
                    for (int i = 0; i < 128; i++) c[i] = Type::store(static_cast<typename Type::Compute>(2 * (i % 9)));
                    launchDivide<Type>(c + aOff, count, 2, threads);
                    for (int i = 0; i < 128; i++) {
                        const bool inRange = i >= aOff && i < aOff + static_cast<int>(count);
                        const double want = inRange ? i % 9 : 2 * (i % 9);
                        check(static_cast<double>(Type::load(c[i])) == want, "%s divide coverage aOff=%d count=%llu i=%d",
                              name, aOff, count, i);
                    }
                }
            }
        }
    }
}

template <typename Type, typename Op>
static typename Type::Storage one(typename Type::Storage x, typename Type::Storage y) {
    launchReduce<Type, Op>(&x, &y, 1, 1);
    return x;
}

template <typename Type>
static typename Type::Storage divided(typename Type::Storage x, int divisor) {
    launchDivide<Type>(&x, 1, divisor, 1);
    return x;
}

template <typename T, typename Bits>
static Bits bits(T v) {
    Bits b;
    memcpy(&b, &v, sizeof b);
    return b;
}

template <typename Type, typename Bits>
static void floatEdges(const char* name) {
    using C = typename Type::Compute;
    const C nan = std::numeric_limits<C>::quiet_NaN(), inf = std::numeric_limits<C>::infinity();
    const C pz = 0.0, nz = -0.0;
    check(one<Type, Min>(nan, 1) != one<Type, Min>(nan, 1), "%s min(NaN, 1) is NaN", name);
    check(one<Type, Min>(1, nan) != one<Type, Min>(1, nan), "%s min(1, NaN) is NaN", name);
    check(one<Type, Max>(nan, 1) != one<Type, Max>(nan, 1), "%s max(NaN, 1) is NaN", name);
    check(one<Type, Max>(1, nan) != one<Type, Max>(1, nan), "%s max(1, NaN) is NaN", name);
    check(bits<C, Bits>(one<Type, Min>(pz, nz)) == bits<C, Bits>(nz), "%s min(+0, -0) = -0", name);
    check(bits<C, Bits>(one<Type, Min>(nz, pz)) == bits<C, Bits>(nz), "%s min(-0, +0) = -0", name);
    check(bits<C, Bits>(one<Type, Max>(pz, nz)) == bits<C, Bits>(pz), "%s max(+0, -0) = +0", name);
    check(bits<C, Bits>(one<Type, Max>(nz, pz)) == bits<C, Bits>(pz), "%s max(-0, +0) = +0", name);
    check(one<Type, Min>(-inf, 3) == -inf && one<Type, Max>(-inf, 3) == 3, "%s min/max with infinity", name);
    check(one<Type, Sum>(inf, -inf) != one<Type, Sum>(inf, -inf), "%s inf + -inf is NaN", name);
    check(divided<Type>(1, 3) == static_cast<C>(1) / static_cast<C>(3), "%s 1 / 3", name);
    check(divided<Type>(-7, 2) == static_cast<C>(-3.5), "%s -7 / 2", name);
}

// 16-bit floats as storage bits; expectations are what dev.panamax.memory.Half gives.
template <typename Type>
static void sixteen(const char* name, unsigned short x, unsigned short y, char op, unsigned short want) {
    unsigned short got = op == '+' ? one<Type, Sum>(x, y)
                       : op == '*' ? one<Type, Prod>(x, y)
                       : op == '<' ? one<Type, Min>(x, y)
                       : op == '>' ? one<Type, Max>(x, y)
                                   : divided<Type>(x, y);
    check(got == want, "%s 0x%04x %c 0x%04x = 0x%04x, want 0x%04x", name, x, op, y, got, want);
}

int main() {
    coverage<F32>("f32");
    coverage<F64>("f64");
    coverage<F16>("f16");
    coverage<BF16>("bf16");
    coverage<I32>("i32");
    coverage<I64>("i64");
    coverage<I8>("i8");
    coverage<U8>("u8");

    floatEdges<F32, uint32_t>("f32");
    floatEdges<F64, uint64_t>("f64");

    // float16: ties round to even, overflow gives infinity, subnormals are kept, NaN stays NaN.
    sixteen<F16>("f16", 0x3c00, 0x1000, '+', 0x3c00);  // 1 + 2^-11: tie, to even
    sixteen<F16>("f16", 0x3c01, 0x1000, '+', 0x3c02);  // tie, to even (up)
    sixteen<F16>("f16", 0x7bff, 0x7bff, '+', 0x7c00);  // 65504 + 65504 = inf
    sixteen<F16>("f16", 0x0001, 0x0001, '+', 0x0002);  // smallest subnormals
    sixteen<F16>("f16", 0x3e00, 0x3e00, '*', 0x4080);  // 1.5 * 1.5 = 2.25
    sixteen<F16>("f16", 0x8000, 0x0000, '<', 0x8000);  // min(-0, +0) = -0
    sixteen<F16>("f16", 0x8000, 0x0000, '>', 0x0000);  // max(-0, +0) = +0
    sixteen<F16>("f16", 0x3c00, 3, '/', 0x3555);       // 1 / 3
    check((one<F16, Max>(0x7e00, 0x3c00) & 0x7fff) > 0x7c00, "f16 max(NaN, 1) is NaN");
    check((one<F16, Min>(0x3c00, 0x7e00) & 0x7fff) > 0x7c00, "f16 min(1, NaN) is NaN");
    // bfloat16
    sixteen<BF16>("bf16", 0x3f80, 0x3b80, '+', 0x3f80);  // 1 + 2^-8: tie, to even
    sixteen<BF16>("bf16", 0x3f81, 0x3b80, '+', 0x3f82);  // tie, to even (up)
    sixteen<BF16>("bf16", 0x7f7f, 0x7f7f, '+', 0x7f80);  // max + max = inf
    sixteen<BF16>("bf16", 0x3f80, 3, '/', 0x3eab);       // 1 / 3
    sixteen<BF16>("bf16", 0x8000, 0x0000, '<', 0x8000);
    sixteen<BF16>("bf16", 0x8000, 0x0000, '>', 0x0000);
    check((one<BF16, Min>(0x7fc0, 0x3f80) & 0x7fff) > 0x7f80, "bf16 min(NaN, 1) is NaN");

    // Integers wrap; i8 compares signed, u8 unsigned; division truncates toward zero.
    check(one<I32, Sum>(INT32_MAX, 1) == INT32_MIN, "i32 sum wraps");
    check(one<I32, Prod>(0x10000, 0x10000) == 0, "i32 prod wraps");
    check(one<I32, Prod>(-3, 5) == -15, "i32 prod sign");
    check(one<I64, Sum>(INT64_MAX, 1) == INT64_MIN, "i64 sum wraps");
    check(one<I64, Prod>(INT64_C(1) << 32, INT64_C(1) << 32) == 0, "i64 prod wraps");
    check(one<I8, Sum>(127, 1) == -128, "i8 sum wraps");
    check(one<I8, Prod>(16, 16) == 0, "i8 prod wraps");
    check(one<I8, Min>(-56, 100) == -56 && one<I8, Max>(-56, 100) == 100, "i8 compares signed");
    check(one<U8, Min>(200, 100) == 100 && one<U8, Max>(200, 100) == 200, "u8 compares unsigned");
    check(one<U8, Sum>(200, 100) == 44, "u8 sum wraps");
    check(one<I32, Min>(INT32_MIN, 0) == INT32_MIN && one<I64, Max>(INT64_MIN, -1) == -1, "i32/i64 min/max");
    check(divided<I32>(-7, 2) == -3 && divided<I32>(7, 2) == 3 && divided<I32>(INT32_MIN, 3) == -715827882,
          "i32 divide truncates");
    check(divided<I64>(-7, 2) == -3 && divided<I64>(INT64_MIN, 2) == INT64_MIN / 2, "i64 divide truncates");
    check(divided<I8>(-7, 2) == -3 && divided<I8>(-128, 3) == -42, "i8 divide truncates");
    check(divided<U8>(200, 3) == 66 && divided<U8>(255, 2) == 127, "u8 divides unsigned");

    if (failures != 0) {
        fprintf(stderr, "reduce_host_check: %d failures\n", failures);
        return 1;
    }
    printf("reduce_host_check: all checks passed\n");
    return 0;
}
