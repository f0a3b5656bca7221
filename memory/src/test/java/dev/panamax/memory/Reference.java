package dev.panamax.memory;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;

/**
 * Scalar reference arithmetic for the tests, written independently of the library: one element at
 * a time, 16-bit floats decoded and rounded with double arithmetic rather than with {@link Half}.
 */
final class Reference {
    private Reference() {
    }

    /** Value of IEEE binary16 bits, decoded from its fields. */
    static float f16ToFloat(short bits) {
        int sign = (bits >> 15) & 1, exp = (bits >> 10) & 0x1f, mant = bits & 0x3ff;
        double v;
        if (exp == 0x1f) {
            v = mant == 0 ? Double.POSITIVE_INFINITY : Double.NaN;
        } else if (exp == 0) {
            v = mant * 0x1p-24;
        } else {
            v = (1024 + mant) * Math.scalb(1.0, exp - 25);
        }
        return (float) (sign == 1 ? -v : v);
    }

    /** binary16 bits of {@code f}, rounded to nearest-even with Math.rint on the scaled magnitude. */
    static short floatToF16(float f) {
        if (Float.isNaN(f)) {
            return (short) 0x7e00;
        }
        int sign = Math.copySign(1f, f) < 0 ? 0x8000 : 0;
        double a = Math.abs((double) f);
        if (a == 0) {
            return (short) sign;
        }
        int e = Math.max(Math.getExponent(a), -14);
        double ulp = Math.scalb(1.0, e - 10);
        double v = Math.rint(a / ulp) * ulp; // ties to even
        if (v > 65504) {
            return (short) (sign | 0x7c00);
        }
        int ve = Math.getExponent(v);
        int bits;
        if (v == 0) {
            bits = 0;
        } else if (ve < -14) {
            bits = (int) (v / 0x1p-24);
        } else {
            bits = ((ve + 15) << 10) | ((int) (v / Math.scalb(1.0, ve - 10)) - 1024);
        }
        return (short) (sign | bits);
    }

    static float bf16ToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xffff) << 16);
    }

    /** bfloat16 bits of {@code f}, rounded to nearest-even with Math.rint on the scaled magnitude. */
    static short floatToBf16(float f) {
        if (Float.isNaN(f)) {
            return (short) 0x7fc0;
        }
        int sign = Math.copySign(1f, f) < 0 ? 0x8000 : 0;
        double a = Math.abs((double) f);
        if (a == 0 || Double.isInfinite(a)) {
            return (short) (sign | (a == 0 ? 0 : 0x7f80));
        }
        int e = Math.max(Math.getExponent(a), -126);
        double ulp = Math.scalb(1.0, e - 7);
        double v = Math.rint(a / ulp) * ulp;
        if (v > Float.MAX_VALUE) {
            return (short) (sign | 0x7f80);
        }
        return (short) (sign | (Float.floatToRawIntBits((float) v) >>> 16));
    }

    static boolean isF16NaN(short bits) {
        return (bits & 0x7c00) == 0x7c00 && (bits & 0x3ff) != 0;
    }

    static boolean isBf16NaN(short bits) {
        return (bits & 0x7f80) == 0x7f80 && (bits & 0x7f) != 0;
    }

    static float minF(float p, float q) {
        if (p != p || q != q) return Float.NaN;
        if (p == 0 && q == 0) return Float.intBitsToFloat(Float.floatToRawIntBits(p) | Float.floatToRawIntBits(q));
        return p < q ? p : q;
    }

    static float maxF(float p, float q) {
        if (p != p || q != q) return Float.NaN;
        if (p == 0 && q == 0) return Float.intBitsToFloat(Float.floatToRawIntBits(p) & Float.floatToRawIntBits(q));
        return p > q ? p : q;
    }

    static double minD(double p, double q) {
        if (p != p || q != q) return Double.NaN;
        if (p == 0 && q == 0) return Double.longBitsToDouble(Double.doubleToRawLongBits(p)
                | Double.doubleToRawLongBits(q));
        return p < q ? p : q;
    }

    static double maxD(double p, double q) {
        if (p != p || q != q) return Double.NaN;
        if (p == 0 && q == 0) return Double.longBitsToDouble(Double.doubleToRawLongBits(p)
                & Double.doubleToRawLongBits(q));
        return p > q ? p : q;
    }

    static float applyF(ReduceOp op, float p, float q) {
        return switch (op) {
            case SUM, AVG -> p + q;
            case PROD -> p * q;
            case MIN -> minF(p, q);
            case MAX -> maxF(p, q);
        };
    }

    static double applyD(ReduceOp op, double p, double q) {
        return switch (op) {
            case SUM, AVG -> p + q;
            case PROD -> p * q;
            case MIN -> minD(p, q);
            case MAX -> maxD(p, q);
        };
    }

    /** Integer op on exact values, wrapped to {@code bits} bits (two's complement), via BigInteger. */
    static long applyInt(ReduceOp op, long p, long q, int bits) {
        BigInteger r = switch (op) {
            case SUM, AVG -> BigInteger.valueOf(p).add(BigInteger.valueOf(q));
            case PROD -> BigInteger.valueOf(p).multiply(BigInteger.valueOf(q));
            case MIN -> BigInteger.valueOf(p < q ? p : q);
            case MAX -> BigInteger.valueOf(p > q ? p : q);
        };
        return r.longValue() & (bits == 64 ? -1L : (1L << bits) - 1);
    }

    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;

    /** Expected raw element bits (zero-extended to long) of {@code a[i] op b[i]}. */
    static long expected(DataType t, ReduceOp op, MemorySegment a, long ao, MemorySegment b, long bo, long i) {
        long pa = ao + i * t.byteSize(), pb = bo + i * t.byteSize();
        return switch (t) {
            case FLOAT32 -> Float.floatToRawIntBits(applyF(op, a.get(F32, pa), b.get(F32, pb))) & 0xffffffffL;
            case FLOAT64 -> Double.doubleToRawLongBits(applyD(op, a.get(F64, pa), b.get(F64, pb)));
            case INT32 -> applyInt(op, a.get(I32, pa), b.get(I32, pb), 32);
            case INT64 -> applyInt(op, a.get(I64, pa), b.get(I64, pb), 64);
            case INT8 -> applyInt(op, a.get(ValueLayout.JAVA_BYTE, pa), b.get(ValueLayout.JAVA_BYTE, pb), 8);
            case UINT8 -> applyInt(op, a.get(ValueLayout.JAVA_BYTE, pa) & 0xff, b.get(ValueLayout.JAVA_BYTE, pb) & 0xff,
                    8);
            case FLOAT16 -> floatToF16(applyF(op, f16ToFloat(a.get(I16, pa)), f16ToFloat(b.get(I16, pb)))) & 0xffffL;
            case BFLOAT16 -> floatToBf16(applyF(op, bf16ToFloat(a.get(I16, pa)), bf16ToFloat(b.get(I16, pb))))
                    & 0xffffL;
        };
    }

    /** Expected raw bits of {@code s[i] / divisor}. */
    static long expectedDivide(DataType t, MemorySegment s, long off, long i, int divisor) {
        long p = off + i * t.byteSize();
        return switch (t) {
            case FLOAT32 -> Float.floatToRawIntBits(s.get(F32, p) / (float) divisor) & 0xffffffffL;
            case FLOAT64 -> Double.doubleToRawLongBits(s.get(F64, p) / (double) divisor);
            case INT32 -> BigInteger.valueOf(s.get(I32, p)).divide(BigInteger.valueOf(divisor)).longValue()
                    & 0xffffffffL;
            case INT64 -> BigInteger.valueOf(s.get(I64, p)).divide(BigInteger.valueOf(divisor)).longValue();
            case INT8 -> BigInteger.valueOf(s.get(ValueLayout.JAVA_BYTE, p)).divide(BigInteger.valueOf(divisor))
                    .longValue() & 0xff;
            case UINT8 -> (s.get(ValueLayout.JAVA_BYTE, p) & 0xff) / divisor;
            case FLOAT16 -> floatToF16(f16ToFloat(s.get(I16, p)) / divisor) & 0xffffL;
            case BFLOAT16 -> floatToBf16(bf16ToFloat(s.get(I16, p)) / divisor) & 0xffffL;
        };
    }

    /** Raw bits of element {@code i}, zero-extended. */
    static long raw(DataType t, MemorySegment s, long off, long i) {
        long p = off + i * t.byteSize();
        return switch (t.byteSize()) {
            case 1 -> s.get(ValueLayout.JAVA_BYTE, p) & 0xffL;
            case 2 -> s.get(I16, p) & 0xffffL;
            case 4 -> s.get(I32, p) & 0xffffffffL;
            default -> s.get(I64, p);
        };
    }

    /** True when raw bits are a NaN of type {@code t} (NaN payloads are not compared). */
    static boolean isNaN(DataType t, long bits) {
        return switch (t) {
            case FLOAT32 -> Float.isNaN(Float.intBitsToFloat((int) bits));
            case FLOAT64 -> Double.isNaN(Double.longBitsToDouble(bits));
            case FLOAT16 -> isF16NaN((short) bits);
            case BFLOAT16 -> isBf16NaN((short) bits);
            default -> false;
        };
    }
}
