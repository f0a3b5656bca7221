package dev.panamax.memory;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Element-wise reduction kernels over {@link MemorySegment}s. Offsets are in bytes, counts in
 * elements. Segments may overlap only when they are the same range ({@code acc = acc op b}).
 * Integer arithmetic wraps (two's complement); uint8 compares unsigned; the 16-bit floating types
 * compute in float and round each result back to nearest-even.
 */
public final class Reductions {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfByte I8 = ValueLayout.JAVA_BYTE;
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;

    private Reductions() {
    }

    /** {@code acc[i] = acc[i] op src[i]} for {@code count} elements. AVG accumulates as SUM. */
    public static void accumulate(DataType type, ReduceOp op, MemorySegment acc, long accOffset,
                                  MemorySegment src, long srcOffset, long count) {
        reduce(type, op, acc, accOffset, acc, accOffset, src, srcOffset, count);
    }

    /** {@code dst[i] = a[i] op b[i]} for {@code count} elements. AVG reduces as SUM. */
    public static void reduce(DataType type, ReduceOp op, MemorySegment dst, long dstOffset,
                              MemorySegment a, long aOffset, MemorySegment b, long bOffset, long count) {
        if (count == 0) {
            return;
        }
        long bytes = count * type.byteSize();
        checkRange("dst", dst, dstOffset, bytes);
        checkRange("a", a, aOffset, bytes);
        checkRange("b", b, bOffset, bytes);
        MemorySegment d = dst.asSlice(dstOffset, bytes);
        MemorySegment x = a.asSlice(aOffset, bytes);
        MemorySegment y = b.asSlice(bOffset, bytes);
        switch (type) {
            case FLOAT32 -> f32(op.accumulating(), d, x, y, count);
            case FLOAT64 -> f64(op.accumulating(), d, x, y, count);
            case INT32 -> i32(op.accumulating(), d, x, y, count);
            case INT64 -> i64(op.accumulating(), d, x, y, count);
            case INT8 -> i8(op.accumulating(), d, x, y, count, false);
            case UINT8 -> i8(op.accumulating(), d, x, y, count, true);
            case FLOAT16, BFLOAT16 -> half(type, op.accumulating(), d, x, y, count);
        }
    }

    /** Divides {@code count} elements by {@code divisor} in place (the end of an AVG; integers truncate toward zero). */
    public static void divide(DataType type, MemorySegment segment, long offset, long count, int divisor) {
        if (divisor <= 0) {
            throw new IllegalArgumentException("divisor must be positive: " + divisor);
        }
        if (count == 0 || divisor == 1) {
            return;
        }
        checkRange("segment", segment, offset, count * type.byteSize());
        for (long i = 0; i < count; i++) {
            switch (type) {
                case FLOAT32 -> segment.set(F32, offset + 4 * i, segment.get(F32, offset + 4 * i) / divisor);
                case FLOAT64 -> segment.set(F64, offset + 8 * i, segment.get(F64, offset + 8 * i) / divisor);
                case INT32 -> segment.set(I32, offset + 4 * i, segment.get(I32, offset + 4 * i) / divisor);
                case INT64 -> segment.set(I64, offset + 8 * i, segment.get(I64, offset + 8 * i) / divisor);
                case INT8 -> segment.set(I8, offset + i, (byte) (segment.get(I8, offset + i) / divisor));
                case UINT8 -> segment.set(I8, offset + i, (byte) (Byte.toUnsignedInt(segment.get(I8, offset + i)) / divisor));
                case FLOAT16, BFLOAT16 -> type.setFromDouble(segment, offset, i, (float) (type.getAsDouble(segment, offset, i) / divisor));
            }
        }
    }

    private static void checkRange(String name, MemorySegment s, long offset, long bytes) {
        if (offset < 0 || bytes < 0 || offset > s.byteSize() - bytes) {
            throw new IndexOutOfBoundsException("reduction operand '" + name + "': " + bytes + " bytes at offset " + offset
                    + " exceed the segment of " + s.byteSize() + " bytes");
        }
    }

    private static void f32(ReduceOp op, MemorySegment d, MemorySegment x, MemorySegment y, long n) {
        switch (op) {
            case SUM -> { for (long i = 0; i < n; i++) d.setAtIndex(F32, i, x.getAtIndex(F32, i) + y.getAtIndex(F32, i)); }
            case PROD -> { for (long i = 0; i < n; i++) d.setAtIndex(F32, i, x.getAtIndex(F32, i) * y.getAtIndex(F32, i)); }
            case MIN -> { for (long i = 0; i < n; i++) d.setAtIndex(F32, i, Math.min(x.getAtIndex(F32, i), y.getAtIndex(F32, i))); }
            case MAX -> { for (long i = 0; i < n; i++) d.setAtIndex(F32, i, Math.max(x.getAtIndex(F32, i), y.getAtIndex(F32, i))); }
            default -> throw new AssertionError(op);
        }
    }

    private static void f64(ReduceOp op, MemorySegment d, MemorySegment x, MemorySegment y, long n) {
        switch (op) {
            case SUM -> { for (long i = 0; i < n; i++) d.setAtIndex(F64, i, x.getAtIndex(F64, i) + y.getAtIndex(F64, i)); }
            case PROD -> { for (long i = 0; i < n; i++) d.setAtIndex(F64, i, x.getAtIndex(F64, i) * y.getAtIndex(F64, i)); }
            case MIN -> { for (long i = 0; i < n; i++) d.setAtIndex(F64, i, Math.min(x.getAtIndex(F64, i), y.getAtIndex(F64, i))); }
            case MAX -> { for (long i = 0; i < n; i++) d.setAtIndex(F64, i, Math.max(x.getAtIndex(F64, i), y.getAtIndex(F64, i))); }
            default -> throw new AssertionError(op);
        }
    }

    private static void i32(ReduceOp op, MemorySegment d, MemorySegment x, MemorySegment y, long n) {
        switch (op) {
            case SUM -> { for (long i = 0; i < n; i++) d.setAtIndex(I32, i, x.getAtIndex(I32, i) + y.getAtIndex(I32, i)); }
            case PROD -> { for (long i = 0; i < n; i++) d.setAtIndex(I32, i, x.getAtIndex(I32, i) * y.getAtIndex(I32, i)); }
            case MIN -> { for (long i = 0; i < n; i++) d.setAtIndex(I32, i, Math.min(x.getAtIndex(I32, i), y.getAtIndex(I32, i))); }
            case MAX -> { for (long i = 0; i < n; i++) d.setAtIndex(I32, i, Math.max(x.getAtIndex(I32, i), y.getAtIndex(I32, i))); }
            default -> throw new AssertionError(op);
        }
    }

    private static void i64(ReduceOp op, MemorySegment d, MemorySegment x, MemorySegment y, long n) {
        switch (op) {
            case SUM -> { for (long i = 0; i < n; i++) d.setAtIndex(I64, i, x.getAtIndex(I64, i) + y.getAtIndex(I64, i)); }
            case PROD -> { for (long i = 0; i < n; i++) d.setAtIndex(I64, i, x.getAtIndex(I64, i) * y.getAtIndex(I64, i)); }
            case MIN -> { for (long i = 0; i < n; i++) d.setAtIndex(I64, i, Math.min(x.getAtIndex(I64, i), y.getAtIndex(I64, i))); }
            case MAX -> { for (long i = 0; i < n; i++) d.setAtIndex(I64, i, Math.max(x.getAtIndex(I64, i), y.getAtIndex(I64, i))); }
            default -> throw new AssertionError(op);
        }
    }

    private static void i8(ReduceOp op, MemorySegment d, MemorySegment x, MemorySegment y, long n, boolean unsigned) {
        switch (op) {
            case SUM -> { for (long i = 0; i < n; i++) d.set(I8, i, (byte) (x.get(I8, i) + y.get(I8, i))); }
            case PROD -> { for (long i = 0; i < n; i++) d.set(I8, i, (byte) (x.get(I8, i) * y.get(I8, i))); }
            case MIN, MAX -> {
                boolean min = op == ReduceOp.MIN;
                for (long i = 0; i < n; i++) {
                    int p = unsigned ? Byte.toUnsignedInt(x.get(I8, i)) : x.get(I8, i);
                    int q = unsigned ? Byte.toUnsignedInt(y.get(I8, i)) : y.get(I8, i);
                    d.set(I8, i, (byte) (min ? Math.min(p, q) : Math.max(p, q)));
                }
            }
            default -> throw new AssertionError(op);
        }
    }

    private static void half(DataType type, ReduceOp op, MemorySegment d, MemorySegment x, MemorySegment y, long n) {
        boolean bf = type == DataType.BFLOAT16;
        for (long i = 0; i < n; i++) {
            short p = x.getAtIndex(I16, i);
            short q = y.getAtIndex(I16, i);
            float a = bf ? Half.bfloat16ToFloat(p) : Half.float16ToFloat(p);
            float b = bf ? Half.bfloat16ToFloat(q) : Half.float16ToFloat(q);
            float r = switch (op) {
                case SUM -> a + b;
                case PROD -> a * b;
                case MIN -> Math.min(a, b);
                case MAX -> Math.max(a, b);
                default -> throw new AssertionError(op);
            };
            d.setAtIndex(I16, i, bf ? Half.floatToBfloat16(r) : Half.floatToFloat16(r));
        }
    }
}
