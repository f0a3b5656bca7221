// Host stand-in for the CUDA toolkit's cuda_bf16.h: the __nv_bfloat16 storage type and the
// conversions reduce.cu uses, with the device's results (float to bfloat16 rounds to nearest-even,
// overflow gives infinity, NaN stays NaN).
#ifndef PANAMAX_SHIM_CUDA_BF16_H
#define PANAMAX_SHIM_CUDA_BF16_H

#include <stdint.h>
#include <string.h>

#include "panamax_device_shim.h"

struct __nv_bfloat16 {
    unsigned short x;
};

inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits) {
    __nv_bfloat16 b;
    b.x = bits;
    return b;
}

inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) {
    return b.x;
}

inline float __bfloat162float(__nv_bfloat16 b) {
    const uint32_t bits = static_cast<uint32_t>(b.x) << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

inline __nv_bfloat16 __float2bfloat16_rn(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep it a (quiet) NaN
        return __ushort_as_bfloat16(static_cast<unsigned short>((bits >> 16) | 0x40u));
    }
    bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest-even; overflow carries into infinity
    return __ushort_as_bfloat16(static_cast<unsigned short>(bits >> 16));
}

#endif
