package dev.panamax.memory;

/** Conversions between float and the 16-bit floating formats, rounding to nearest-even. */
public final class Half {
    private Half() {
    }

    /** IEEE 754 binary16 bits of {@code f}, rounded to nearest-even. */
    public static short floatToFloat16(float f) {
        return Float.floatToFloat16(f);
    }

    /** The float value of IEEE 754 binary16 bits (exact). */
    public static float float16ToFloat(short bits) {
        return Float.float16ToFloat(bits);
    }

    /** bfloat16 bits of {@code f} (the upper half of the float), rounded to nearest-even; NaN stays a quiet NaN. */
    public static short floatToBfloat16(float f) {
        int bits = Float.floatToRawIntBits(f);
        if ((bits & 0x7fffffff) > 0x7f800000) {
            return (short) ((bits >>> 16) | 0x0040);
        }
        int roundingBias = 0x7fff + ((bits >>> 16) & 1);
        return (short) ((bits + roundingBias) >>> 16);
    }

    /** The float value of bfloat16 bits (exact). */
    public static float bfloat16ToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xffff) << 16);
    }
}
