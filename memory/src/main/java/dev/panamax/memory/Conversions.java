package dev.panamax.memory;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * Conversions between a floating data type ({@link DataType#FLOAT32}, {@link DataType#FLOAT64}) and a 16-bit wire
 * type ({@link DataType#BFLOAT16}, {@link DataType#FLOAT16}), and the reduction of wire-type elements into an
 * accumulator of the wider type: the kernels of an all-reduce that sends 16-bit values and keeps its partial
 * results wide. Narrowing rounds to nearest-even (float64 goes through float32 first: a double rounding, which at
 * 8 or 11 significant bits changes nothing but ties); widening is exact. Offsets and counts are in elements.
 *
 * <p>float32 and bfloat16 run on the Vector API when {@link Reductions#isVectorized()} (bfloat16 is the upper half
 * of a float32, so narrowing is integer rounding on the float bits, and widening a shift). The rest is staged
 * through small arrays: bfloat16 rounded as integer arithmetic on the float bits (branch-free, NaN kept quiet),
 * float16 through {@link Float#floatToFloat16}; the folds run on {@link Reductions}' kernels.
 */
public final class Conversions {
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    private static final ValueLayout.OfShort S16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfChar U16 = ValueLayout.JAVA_CHAR_UNALIGNED;
    private static final int CHUNK = 2048;

    private Conversions() {
    }

    /** Whether {@code type} can be narrowed to {@code wire}: float32 or float64 to bfloat16 or float16. */
    public static boolean isNarrowing(DataType type, DataType wire) {
        return (type == DataType.FLOAT32 || type == DataType.FLOAT64)
                && (wire == DataType.BFLOAT16 || wire == DataType.FLOAT16);
    }

    /** dst[dstOffset + i] = {@code src[srcOffset + i]} rounded to {@code wire}, i &lt; count. */
    public static void narrow(DataType type, MemorySegment src, long srcOffset, DataType wire, MemorySegment dst,
            long dstOffset, long count) {
        check(type, wire, count);
        if (type == DataType.FLOAT32 && wire == DataType.BFLOAT16 && Reductions.isVectorized()) {
            long done = VectorKernels.narrowBf16(src.asSlice(4 * srcOffset, 4 * count),
                    dst.asSlice(2 * dstOffset, 2 * count), count);
            srcOffset += done;
            dstOffset += done;
            count -= done;
        }
        int n = (int) Math.min(CHUNK, count);
        int[] bits = new int[n];
        float[] f = new float[n];
        double[] d = type == DataType.FLOAT64 ? new double[n] : null;
        short[] s = new short[n];
        for (long i = 0; i < count; i += CHUNK) {
            int m = (int) Math.min(CHUNK, count - i);
            boolean bf16 = wire == DataType.BFLOAT16;
            if (d != null) {
                MemorySegment.copy(src, F64, 8 * (srcOffset + i), d, 0, m);
                for (int k = 0; k < m; k++) {
                    f[k] = (float) d[k];
                }
                if (bf16) {
                    for (int k = 0; k < m; k++) {
                        bits[k] = Float.floatToRawIntBits(f[k]);
                    }
                }
            } else if (bf16) {
                MemorySegment.copy(src, I32, 4 * (srcOffset + i), bits, 0, m);
            } else {
                MemorySegment.copy(src, F32, 4 * (srcOffset + i), f, 0, m);
            }
            if (bf16) {
                toBfloat16(bits, s, m);
            } else {
                for (int k = 0; k < m; k++) {
                    s[k] = Float.floatToFloat16(f[k]);
                }
            }
            MemorySegment.copy(s, 0, dst, S16, 2 * (dstOffset + i), m);
        }
    }

    /** s[k] = the bfloat16 of float bits b[k], to nearest-even, a NaN kept a quiet NaN: Half's rule, branch-free. */
    private static void toBfloat16(int[] b, short[] s, int m) {
        for (int k = 0; k < m; k++) {
            int x = b[k];
            int rounded = (x + 0x7fff + ((x >>> 16) & 1)) >>> 16;
            int quiet = (x >>> 16) | 0x40;
            int nan = (0x7f800000 - (x & 0x7fffffff)) >> 31; // all ones for a NaN
            s[k] = (short) ((rounded & ~nan) | (quiet & nan));
        }
    }

    /** dst[dstOffset + i] = {@code src[srcOffset + i]} (of {@code wire}) as {@code type}, exactly, i &lt; count. */
    public static void widen(DataType wire, MemorySegment src, long srcOffset, DataType type, MemorySegment dst,
            long dstOffset, long count) {
        fold(wire, src, srcOffset, type, dst, dstOffset, count, null);
    }

    /**
     * acc[accOffset + i] = op(acc[accOffset + i], {@code src[srcOffset + i]} widened to {@code type}), i &lt; count,
     * in {@code type}'s arithmetic; {@link ReduceOp#AVG} accumulates as a sum.
     */
    public static void accumulate(DataType wire, MemorySegment src, long srcOffset, DataType type,
            MemorySegment acc, long accOffset, long count, ReduceOp op) {
        Objects.requireNonNull(op, "op");
        fold(wire, src, srcOffset, type, acc, accOffset, count, op);
    }

    /** Widens each chunk into an array, then copies it (op null) or folds it into {@code acc}. */
    private static void fold(DataType wire, MemorySegment src, long srcOffset, DataType type, MemorySegment acc,
            long accOffset, long count, ReduceOp op) {
        check(type, wire, count);
        if (type == DataType.FLOAT32 && wire == DataType.BFLOAT16 && Reductions.isVectorized()) {
            MemorySegment from = src.asSlice(2 * srcOffset, 2 * count);
            MemorySegment to = acc.asSlice(4 * accOffset, 4 * count);
            long done = op == null ? VectorKernels.widenBf16(from, to, count)
                    : VectorKernels.accumulateBf16(op, from, to, count);
            srcOffset += done;
            accOffset += done;
            count -= done;
        }
        int n = (int) Math.min(CHUNK, count);
        char[] c = new char[n];
        int[] bits = new int[n];
        MemorySegment floats = MemorySegment.ofArray(bits); // the widened chunk, read as float32
        double[] d = type == DataType.FLOAT64 ? new double[n] : null;
        MemorySegment doubles = d == null ? null : MemorySegment.ofArray(d);
        for (long i = 0; i < count; i += CHUNK) {
            int m = (int) Math.min(CHUNK, count - i);
            MemorySegment.copy(src, U16, 2 * (srcOffset + i), c, 0, m);
            if (wire == DataType.BFLOAT16) {
                for (int k = 0; k < m; k++) {
                    bits[k] = c[k] << 16;
                }
            } else {
                for (int k = 0; k < m; k++) {
                    bits[k] = Float.floatToRawIntBits(Float.float16ToFloat((short) c[k]));
                }
            }
            MemorySegment chunk = floats;
            if (d != null) {
                for (int k = 0; k < m; k++) {
                    d[k] = Float.intBitsToFloat(bits[k]);
                }
                chunk = doubles;
            }
            long bytes = m * type.byteSize();
            if (op == null) {
                MemorySegment.copy(chunk, 0, acc, (accOffset + i) * type.byteSize(), bytes);
            } else {
                Reductions.accumulate(type, op, acc, (accOffset + i) * type.byteSize(), chunk, 0, m);
            }
        }
    }

    private static void check(DataType type, DataType wire, long count) {
        if (!isNarrowing(type, wire)) {
            throw new IllegalArgumentException("conversions go between float32 or float64 and bfloat16 or float16, "
                    + "not " + type.canonicalName() + " and " + wire.canonicalName());
        }
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0: " + count);
        }
    }
}
