// Host stand-in for the CUDA toolkit's cuda_fp16.h: the __half storage type and the conversions
// reduce.cu uses, with the device's results (float to half rounds to nearest-even, overflow gives
// infinity, subnormals are kept, NaN stays NaN).
#ifndef PANAMAX_SHIM_CUDA_FP16_H
#define PANAMAX_SHIM_CUDA_FP16_H

#include <stdint.h>
#include <string.h>

#include "panamax_device_shim.h"

struct __half {
    unsigned short x;
};

inline __half __ushort_as_half(unsigned short bits) {
    __half h;
    h.x = bits;
    return h;
}

inline unsigned short __half_as_ushort(__half h) {
    return h.x;
}

inline float __half2float(__half h) {
    const uint32_t sign = static_cast<uint32_t>(h.x & 0x8000u) << 16;
    const uint32_t exponent = (h.x >> 10) & 0x1fu;
    const uint32_t mantissa = h.x & 0x3ffu;
    uint32_t bits;
    if (exponent == 0) {
        // Zero or subnormal: mantissa * 2^-24, exact in float.
        float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
        memcpy(&bits, &magnitude, sizeof bits);
        bits |= sign;
    } else if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13);  // infinity, or NaN with its payload
    } else {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

inline __half __float2half_rn(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    const unsigned short sign = static_cast<unsigned short>((bits >> 16) & 0x8000u);
    const uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude >= 0x7f800000u) {  // infinity or NaN (kept quiet)
        return __ushort_as_half(sign | (magnitude > 0x7f800000u ? 0x7e00u : 0x7c00u));
    }
    if (magnitude >= 0x477ff000u) {  // 65520 and above round to infinity
        return __ushort_as_half(sign | 0x7c00u);
    }
    if (magnitude < 0x38800000u) {  // below 2^-14: a half subnormal, in units of 2^-24
        const uint32_t exponent = magnitude >> 23;
        if (exponent < 102) {  // below 2^-25: rounds to zero
            return __ushort_as_half(sign);
        }
        const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126 - exponent;  // 14..24
        uint32_t q = mantissa >> shift;
        const uint32_t rest = mantissa & ((1u << shift) - 1);
        const uint32_t half = 1u << (shift - 1);
        if (rest > half || (rest == half && (q & 1u))) q++;
        return __ushort_as_half(static_cast<unsigned short>(sign | q));
    }
    uint32_t q = (magnitude - 0x38000000u) >> 13;  // rebias 127 -> 15, keep 10 mantissa bits
    const uint32_t rest = magnitude & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (q & 1u))) q++;  // a carry moves into the exponent
    return __ushort_as_half(static_cast<unsigned short>(sign | q));
}

#endif
