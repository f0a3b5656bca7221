package dev.panamax.memory;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The plain-Java reduction kernels: one loop per type and operator, no per-element dispatch.
 * They run on any JVM; {@link VectorKernels} is the fast path when the Vector API is present, and
 * these also finish its tails. Reductions take each operand as a segment and a byte offset, divisions
 * a slice of exactly {@code n} elements; callers have checked the ranges. {@code op} is never AVG here.
 */
final class ScalarKernels {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfByte I8 = ValueLayout.JAVA_BYTE;
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;

    private ScalarKernels() {
    }

    /**
     * {@code d[i] = x[i] op y[i]} for {@code n} elements, each operand starting at its byte offset (no slices:
     * a small reduction allocates nothing).
     */
    static void reduce(DataType type, ReduceOp op, MemorySegment d, long dOff, MemorySegment x, long xOff,
            MemorySegment y, long yOff, long n) {
        switch (type) {
            case FLOAT32 -> f32(op, d, dOff, x, xOff, y, yOff, n);
            case FLOAT64 -> f64(op, d, dOff, x, xOff, y, yOff, n);
            case INT32 -> i32(op, d, dOff, x, xOff, y, yOff, n);
            case INT64 -> i64(op, d, dOff, x, xOff, y, yOff, n);
            case INT8 -> i8(op, d, dOff, x, xOff, y, yOff, n);
            case UINT8 -> u8(op, d, dOff, x, xOff, y, yOff, n);
            case FLOAT16 -> f16(op, d, dOff, x, xOff, y, yOff, n);
            case BFLOAT16 -> bf16(op, d, dOff, x, xOff, y, yOff, n);
        }
    }

    private static void f32(ReduceOp op, MemorySegment d, long dOff, MemorySegment x, long xOff,
            MemorySegment y, long yOff, long n) {
        switch (op) {
            case SUM -> { for (long i = 0; i < n; i++) d.set(F32, dOff + 4 * i,
                    x.get(F32, xOff + 4 * i) + y.get(F32, yOff + 4 * i)); }
            case PROD -> { for (long i = 0; i < n; i++) d.set(F32, dOff + 4 * i,
                    x.get(F32, xOff + 4 * i) * y.get(F32, yOff + 4 * i)); }
            case MIN -> { for (long i = 0; i < n; i++) d.set(F32, dOff + 4 * i,
                    Math.min(x.get(F32, xOff + 4 * i), y.get(F32, yOff + 4 * i))); }
            case MAX -> { for (long i = 0; i < n; i++) d.set(F32, dOff + 4 * i,
                    Math.max(x.get(F32, xOff + 4 * i), y.get(F32, yOff + 4 * i))); }
            default -> throw new AssertionError(op);
        }
    }

    private static void f64(ReduceOp op, MemorySegment d, long dOff, MemorySegment x, long xOff,
            MemorySegment y, long yOff, long n) {
        switch (op) {
            case SUM -> { for (long i = 0; i < n; i++) d.set(F64, dOff + 8 * i,
                    x.get(F64, xOff + 8 * i) + y.get(F64, yOff + 8 * i)); }
            case PROD -> { for (long i = 0; i < n; i++) d.set(F64, dOff + 8 * i,
                    x.get(F64, xOff + 8 * i) * y.get(F64, yOff + 8 * i)); }
            case MIN -> { for (long i = 0; i < n; i++) d.set(F64, dOff + 8 * i,
                    Math.min(x.get(F64, xOff + 8 * i), y.get(F64, yOff + 8 * i))); }
            case MAX -> { for (long i = 0; i < n; i++) d.set(F64, dOff + 8 * i,
                    Math.max(x.get(F64, xOff + 8 * i), y.get(F64, yOff + 8 * i))); }
            default -> throw new AssertionError(op);
        }
    }

    private static void i32(ReduceOp op, MemorySegment d, long dOff, MemorySegment x, long xOff,
            MemorySegment y, long yOff, long n) {
        switch (op) {
            case SUM -> { for (long i = 0; i < n; i++) d.set(I32, dOff + 4 * i,
                    x.get(I32, xOff + 4 * i) + y.get(I32, yOff + 4 * i)); }
            case PROD -> { for (long i = 0; i < n; i++) d.set(I32, dOff + 4 * i,
                    x.get(I32, xOff + 4 * i) * y.get(I32, yOff + 4 * i)); }
            case MIN -> { for (long i = 0; i < n; i++) d.set(I32, dOff + 4 * i,
                    Math.min(x.get(I32, xOff + 4 * i), y.get(I32, yOff + 4 * i))); }
            case MAX -> { for (long i = 0; i < n; i++) d.set(I32, dOff + 4 * i,
                    Math.max(x.get(I32, xOff + 4 * i), y.get(I32, yOff + 4 * i))); }
            default -> throw new AssertionError(op);
        }
    }

    private static void i64(ReduceOp op, MemorySegment d, long dOff, MemorySegment x, long xOff,
            MemorySegment y, long yOff, long n) {
        switch (op) {
            case SUM -> { for (long i = 0; i < n; i++) d.set(I64, dOff + 8 * i,
                    x.get(I64, xOff + 8 * i) + y.get(I64, yOff + 8 * i)); }
            case PROD -> { for (long i = 0; i < n; i++) d.set(I64, dOff + 8 * i,
                    x.get(I64, xOff + 8 * i) * y.get(I64, yOff + 8 * i)); }
            case MIN -> { for (long i = 0; i < n; i++) d.set(I64, dOff + 8 * i,
                    Math.min(x.get(I64, xOff + 8 * i), y.get(I64, yOff + 8 * i))); }
            case MAX -> { for (long i = 0; i < n; i++) d.set(I64, dOff + 8 * i,
                    Math.max(x.get(I64, xOff + 8 * i), y.get(I64, yOff + 8 * i))); }
            default -> throw new AssertionError(op);
        }
    }


    private static void i8(ReduceOp op, MemorySegment d, long dOff, MemorySegment x, long xOff,
            MemorySegment y, long yOff, long n) {
        switch (op) {
            case SUM -> { for (long i = 0; i < n; i++) d.set(I8, dOff + i,
                    (byte) (x.get(I8, xOff + i) + y.get(I8, yOff + i))); }
            case PROD -> { for (long i = 0; i < n; i++) d.set(I8, dOff + i,
                    (byte) (x.get(I8, xOff + i) * y.get(I8, yOff + i))); }
            case MIN -> { for (long i = 0; i < n; i++) d.set(I8, dOff + i,
                    (byte) Math.min(x.get(I8, xOff + i), y.get(I8, yOff + i))); }
            case MAX -> { for (long i = 0; i < n; i++) d.set(I8, dOff + i,
                    (byte) Math.max(x.get(I8, xOff + i), y.get(I8, yOff + i))); }
            default -> throw new AssertionError(op);
        }
    }

    private static void u8(ReduceOp op, MemorySegment d, long dOff, MemorySegment x, long xOff,
            MemorySegment y, long yOff, long n) {
        switch (op) {
            // Wrapping sum and product have the same bits signed and unsigned.
            case SUM, PROD -> i8(op, d, dOff, x, xOff, y, yOff, n);
            case MIN -> { for (long i = 0; i < n; i++) d.set(I8, dOff + i,
                    (byte) Math.min(x.get(I8, xOff + i) & 0xff, y.get(I8, yOff + i) & 0xff)); }
            case MAX -> { for (long i = 0; i < n; i++) d.set(I8, dOff + i,
                    (byte) Math.max(x.get(I8, xOff + i) & 0xff, y.get(I8, yOff + i) & 0xff)); }
            default -> throw new AssertionError(op);
        }
    }

    /*
     * float16: HotSpot compiles Float.float16ToFloat/floatToFloat16 to vector conversions in loops
     * over short[] but not over MemorySegments (there they cost ~10 ns an element), so float16 is
     * staged through small heap arrays. Both chunks are read before one is written, so dst may be
     * the same range as x or y.
     */
    private static final int F16_CHUNK = 2048;

    private static void f16(ReduceOp op, MemorySegment d, long dOff, MemorySegment x, long xOff,
            MemorySegment y, long yOff, long n) {
        int c = (int) Math.min(n, F16_CHUNK);
        short[] p = new short[c];
        short[] q = new short[c];
        for (long i = 0; i < n; i += c) {
            int m = (int) Math.min(c, n - i);
            MemorySegment.copy(x, I16, xOff + 2 * i, p, 0, m);
            MemorySegment.copy(y, I16, yOff + 2 * i, q, 0, m);
            switch (op) {
                case SUM -> { for (int k = 0; k < m; k++) p[k] =
                        Float.floatToFloat16(Float.float16ToFloat(p[k]) + Float.float16ToFloat(q[k])); }
                case PROD -> { for (int k = 0; k < m; k++) p[k] =
                        Float.floatToFloat16(Float.float16ToFloat(p[k]) * Float.float16ToFloat(q[k])); }
                case MIN -> { for (int k = 0; k < m; k++) p[k] =
                        Float.floatToFloat16(Math.min(Float.float16ToFloat(p[k]), Float.float16ToFloat(q[k]))); }
                case MAX -> { for (int k = 0; k < m; k++) p[k] =
                        Float.floatToFloat16(Math.max(Float.float16ToFloat(p[k]), Float.float16ToFloat(q[k]))); }
                default -> throw new AssertionError(op);
            }
            MemorySegment.copy(p, 0, d, I16, dOff + 2 * i, m);
        }
    }

    /** {@code d = scalar * x} for {@code n} floating-point elements at byte offsets, in the type's own precision. */
    static void scale(DataType type, MemorySegment d, long dOff, MemorySegment x, long xOff, long n, double scalar) {
        float f = (float) scalar;
        switch (type) {
            case FLOAT32 -> { for (long i = 0; i < n; i++) d.set(F32, dOff + 4 * i, x.get(F32, xOff + 4 * i) * f); }
            case FLOAT64 -> { for (long i = 0; i < n; i++) d.set(F64, dOff + 8 * i, x.get(F64, xOff + 8 * i)
                    * scalar); }
            case FLOAT16 -> f16Scale(d, dOff, x, xOff, n, f);
            case BFLOAT16 -> { for (long i = 0; i < n; i++) d.set(I16, dOff + 2 * i,
                    Half.floatToBfloat16(bf16(x, xOff, i) * f)); }
            default -> throw new IllegalArgumentException("scale: " + type.canonicalName());
        }
    }

    /** {@code d = a * x + b * y} for {@code n} float32 or float64 elements at byte offsets (the vectors' tail). */
    static void scaledSum(DataType type, MemorySegment d, long dOff, MemorySegment x, long xOff, double a,
            MemorySegment y, long yOff, double b, long n) {
        if (type == DataType.FLOAT32) {
            float fa = (float) a;
            float fb = (float) b;
            for (long i = 0; i < n; i++) {
                d.set(F32, dOff + 4 * i, x.get(F32, xOff + 4 * i) * fa + y.get(F32, yOff + 4 * i) * fb);
            }
        } else {
            for (long i = 0; i < n; i++) {
                d.set(F64, dOff + 8 * i, x.get(F64, xOff + 8 * i) * a + y.get(F64, yOff + 8 * i) * b);
            }
        }
    }

    /**
     * {@code d = a * x + b * y} for {@code n} float16 or bfloat16 elements at byte offsets: each product rounded to
     * the type, then the sum; staged through {@code short[]} chunks, where HotSpot vectorizes the conversions.
     */
    static void scaledSum16(DataType type, MemorySegment d, long dOff, MemorySegment x, long xOff, double a,
            MemorySegment y, long yOff, double b, long n) {
        boolean f16 = type == DataType.FLOAT16;
        float fa = (float) a;
        float fb = (float) b;
        int c = (int) Math.min(n, F16_CHUNK);
        short[] p = new short[c];
        short[] q = new short[c];
        float[] u = new float[c];
        float[] v = new float[c];
        for (long i = 0; i < n; i += c) {
            int m = (int) Math.min(c, n - i);
            MemorySegment.copy(x, I16, xOff + 2 * i, p, 0, m);
            MemorySegment.copy(y, I16, yOff + 2 * i, q, 0, m);
            // Each operand widened, and scaled and rounded back to the type unless its scale is 1 (exact).
            if (f16) {
                widenF16(p, u, m, fa);
                widenF16(q, v, m, fb);
                for (int k = 0; k < m; k++) p[k] = Float.floatToFloat16(u[k] + v[k]);
            } else {
                widenBf16(p, u, m, fa);
                widenBf16(q, v, m, fb);
                for (int k = 0; k < m; k++) p[k] = Half.floatToBfloat16(u[k] + v[k]);
            }
            MemorySegment.copy(p, 0, d, I16, dOff + 2 * i, m);
        }
    }

    /** out = the float16 values of h, times f rounded to float16 (when f is not 1). */
    private static void widenF16(short[] h, float[] out, int m, float f) {
        if (f == 1) {
            for (int k = 0; k < m; k++) out[k] = Float.float16ToFloat(h[k]);
        } else {
            for (int k = 0; k < m; k++) {
                out[k] = Float.float16ToFloat(Float.floatToFloat16(Float.float16ToFloat(h[k]) * f));
            }
        }
    }

    /** out = the bfloat16 values of h, times f rounded to bfloat16 (when f is not 1). */
    private static void widenBf16(short[] h, float[] out, int m, float f) {
        if (f == 1) {
            for (int k = 0; k < m; k++) out[k] = Half.bfloat16ToFloat(h[k]);
        } else {
            for (int k = 0; k < m; k++) {
                out[k] = Half.bfloat16ToFloat(Half.floatToBfloat16(Half.bfloat16ToFloat(h[k]) * f));
            }
        }
    }

    /** Staged through arrays, as {@link #f16Divide}: HotSpot vectorizes the conversions there. */
    private static void f16Scale(MemorySegment d, long dOff, MemorySegment x, long xOff, long n, float f) {
        int c = (int) Math.min(n, F16_CHUNK);
        short[] p = new short[c];
        for (long i = 0; i < n; i += c) {
            int m = (int) Math.min(c, n - i);
            MemorySegment.copy(x, I16, xOff + 2 * i, p, 0, m);
            for (int k = 0; k < m; k++) p[k] = Float.floatToFloat16(Float.float16ToFloat(p[k]) * f);
            MemorySegment.copy(p, 0, d, I16, dOff + 2 * i, m);
        }
    }

    private static void f16Divide(MemorySegment s, long off, long n, int divisor) {
        int c = (int) Math.min(n, F16_CHUNK);
        short[] p = new short[c];
        float div = divisor;
        for (long i = 0; i < n; i += c) {
            int m = (int) Math.min(c, n - i);
            MemorySegment.copy(s, I16, off + 2 * i, p, 0, m);
            for (int k = 0; k < m; k++) p[k] = Float.floatToFloat16(Float.float16ToFloat(p[k]) / div);
            MemorySegment.copy(p, 0, s, I16, off + 2 * i, m);
        }
    }

    private static float bf16(MemorySegment s, long offset, long i) {
        return Half.bfloat16ToFloat(s.get(I16, offset + 2 * i));
    }

    private static void bf16(ReduceOp op, MemorySegment d, long dOff, MemorySegment x, long xOff,
            MemorySegment y, long yOff, long n) {
        switch (op) {
            case SUM -> { for (long i = 0; i < n; i++) d.set(I16, dOff + 2 * i,
                    Half.floatToBfloat16(bf16(x, xOff, i) + bf16(y, yOff, i))); }
            case PROD -> { for (long i = 0; i < n; i++) d.set(I16, dOff + 2 * i,
                    Half.floatToBfloat16(bf16(x, xOff, i) * bf16(y, yOff, i))); }
            case MIN -> { for (long i = 0; i < n; i++) d.set(I16, dOff + 2 * i,
                    Half.floatToBfloat16(Math.min(bf16(x, xOff, i), bf16(y, yOff, i)))); }
            case MAX -> { for (long i = 0; i < n; i++) d.set(I16, dOff + 2 * i,
                    Half.floatToBfloat16(Math.max(bf16(x, xOff, i), bf16(y, yOff, i)))); }
            default -> throw new AssertionError(op);
        }
    }

    /** {@code s[i] /= divisor} for {@code n} elements from byte offset {@code off} ({@code divisor > 1}). */
    static void divide(DataType type, MemorySegment s, long off, long n, int divisor) {
        switch (type) {
            case FLOAT32 -> { for (long i = 0; i < n; i++) s.set(F32, off + 4 * i, s.get(F32, off + 4 * i)
                    / divisor); }
            case FLOAT64 -> { for (long i = 0; i < n; i++) s.set(F64, off + 8 * i, s.get(F64, off + 8 * i)
                    / divisor); }
            case INT32 -> { for (long i = 0; i < n; i++) s.set(I32, off + 4 * i, s.get(I32, off + 4 * i)
                    / divisor); }
            case INT64 -> { for (long i = 0; i < n; i++) s.set(I64, off + 8 * i, s.get(I64, off + 8 * i)
                    / divisor); }
            case INT8 -> { for (long i = 0; i < n; i++) s.set(I8, off + i, (byte) (s.get(I8, off + i) / divisor)); }
            case UINT8 -> { for (long i = 0; i < n; i++) s.set(I8, off + i, (byte) ((s.get(I8, off + i) & 0xff)
                    / divisor)); }
            case FLOAT16 -> f16Divide(s, off, n, divisor);
            case BFLOAT16 -> { for (long i = 0; i < n; i++) s.set(I16, off + 2 * i,
                    Half.floatToBfloat16(bf16(s, off, i) / divisor)); }
        }
    }
}
