package dev.panamax.memory;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.Optional;

/**
 * Element-wise reduction kernels over {@link MemorySegment}s. Offsets are in bytes, counts in
 * elements; any offset works (element-aligned offsets are faster). Segments may overlap only when
 * they are the same range ({@code acc = acc op b}); partially overlapping ranges give unspecified
 * results.
 *
 * <p>Semantics: integer arithmetic wraps (two's complement); uint8 compares unsigned; float MIN and
 * MAX follow {@link Math#min(float, float)}: a NaN in either operand gives NaN, and -0.0 is less
 * than +0.0; NaN payloads are not preserved. The 16-bit floating types compute each result in
 * float and round it back to nearest-even ({@link Half}).
 *
 * <p>Errors: an operand range outside its segment throws {@link IndexOutOfBoundsException} naming
 * the operand; a negative count throws {@link IllegalArgumentException}; a segment whose arena is
 * closed throws {@link IllegalStateException}; a read-only destination (the {@code dst} of
 * {@code reduce}, the {@code acc} of {@code accumulate}, the segment of {@code divide}) throws
 * {@link UnsupportedOperationException}, for every type and every count above 0, before anything
 * is written. A count of 0 checks the offsets and does nothing else: it writes nothing, so it
 * accepts a read-only destination.
 *
 * <p>Speed: when the incubator module {@code jdk.incubator.vector} is in the boot layer (run with
 * {@code --add-modules jdk.incubator.vector}), all types but float16 run on the Vector API at
 * memory bandwidth ({@link #isVectorized()}); otherwise plain Java loops run, which HotSpot in this
 * JDK does not vectorize for two native segments (several times slower on large arrays). Setting
 * the system property {@code panamax.kernels.vector=false} forces the plain loops.
 */
public final class Reductions {
    /** System property that disables the Vector API kernels when set to {@code false}. */
    public static final String VECTOR_PROPERTY = "panamax.kernels.vector";

    private static final boolean VECTOR = vectorAvailable();

    private Reductions() {
    }

    /** True when the kernels run on the Vector API (see the class description). */
    public static boolean isVectorized() {
        return VECTOR;
    }

    private static boolean vectorAvailable() {
        if (!Boolean.parseBoolean(System.getProperty(VECTOR_PROPERTY, "true"))) {
            return false;
        }
        Optional<Module> vector = ModuleLayer.boot().findModule("jdk.incubator.vector");
        if (vector.isEmpty() || !Reductions.class.getModule().canRead(vector.get())) {
            return false;
        }
        try {
            return VectorKernels.usable();
        } catch (LinkageError e) {
            return false;
        }
    }

    /** {@code acc[i] = acc[i] op src[i]} for {@code count} elements. AVG accumulates as SUM. */
    public static void accumulate(DataType type, ReduceOp op, MemorySegment acc, long accOffset,
                                  MemorySegment src, long srcOffset, long count) {
        reduce(type, op, acc, accOffset, acc, accOffset, src, srcOffset, count);
    }

    /** {@code dst[i] = a[i] op b[i]} for {@code count} elements. AVG reduces as SUM. */
    public static void reduce(DataType type, ReduceOp op, MemorySegment dst, long dstOffset,
                              MemorySegment a, long aOffset, MemorySegment b, long bOffset, long count) {
        reduce(VECTOR, type, op, dst, dstOffset, a, aOffset, b, bOffset, count);
    }

    /** As the public reduce, choosing the implementation (for tests). */
    static void reduce(boolean vector, DataType type, ReduceOp op, MemorySegment dst, long dstOffset,
                       MemorySegment a, long aOffset, MemorySegment b, long bOffset, long count) {
        Objects.requireNonNull(type, "type");
        ReduceOp pairwise = Objects.requireNonNull(op, "op").accumulating();
        long bytes = byteCount(type, count);
        checkRange("dst", dst, dstOffset, bytes);
        checkRange("a", a, aOffset, bytes);
        checkRange("b", b, bOffset, bytes);
        if (count == 0) {
            return;
        }
        // Checked here rather than left to the writes: the plain loops would throw IllegalArgumentException
        // (MemorySegment.set) and the Vector API UnsupportedOperationException, by type and length.
        requireWritable("dst", dst);
        long done = 0;
        if (vector && bytes >= VectorKernels.vectorBytes()) {
            done = VectorKernels.reduce(type, pairwise, dst, dstOffset, a, aOffset, b, bOffset, bytes);
        }
        if (done < bytes) {
            // Shorter than a vector (a small message's whole reduction) or the vectors' tail: no slices.
            ScalarKernels.reduce(type, pairwise, dst, dstOffset + done, a, aOffset + done, b, bOffset + done,
                    (bytes - done) / type.byteSize());
        }
    }

    /**
     * Divides {@code count} elements by {@code divisor} in place: the end of an AVG. Integers
     * truncate toward zero (uint8 as unsigned); floats divide in their own precision; the 16-bit
     * floating types divide in float and round to nearest-even.
     */
    public static void divide(DataType type, MemorySegment segment, long offset, long count, int divisor) {
        divide(VECTOR, type, segment, offset, count, divisor);
    }

    static void divide(boolean vector, DataType type, MemorySegment segment, long offset, long count, int divisor) {
        Objects.requireNonNull(type, "type");
        if (divisor <= 0) {
            throw new IllegalArgumentException("divisor must be positive: " + divisor);
        }
        long bytes = byteCount(type, count);
        checkRange("segment", segment, offset, bytes);
        if (count == 0) {
            return;
        }
        requireWritable("segment", segment);
        if (divisor == 1) {
            return;
        }
        long done = vector ? VectorKernels.divide(type, segment, offset, bytes, divisor) : 0;
        if (done < bytes) {
            ScalarKernels.divide(type, segment, offset + done, (bytes - done) / type.byteSize(), divisor);
        }
    }

    /**
     * {@code dst[i] = scalar * src[i]} for {@code count} floating-point elements ({@code dst} may be {@code src}):
     * a pre-multiplied sum's scaling of each input, in the type's own precision (float32 multiplies by the scalar
     * as a float32; the 16-bit types multiply in float and round to nearest-even).
     *
     * @throws IllegalArgumentException for an integer type
     */
    public static void scale(DataType type, MemorySegment dst, long dstOffset, MemorySegment src, long srcOffset,
            long count, double scalar) {
        scale(VECTOR, type, dst, dstOffset, src, srcOffset, count, scalar);
    }

    static void scale(boolean vector, DataType type, MemorySegment dst, long dstOffset, MemorySegment src,
            long srcOffset, long count, double scalar) {
        Objects.requireNonNull(type, "type");
        if (!type.isFloatingPoint()) {
            throw new IllegalArgumentException("scale: floating-point types only, not " + type.canonicalName());
        }
        long bytes = byteCount(type, count);
        checkRange("dst", dst, dstOffset, bytes);
        checkRange("src", src, srcOffset, bytes);
        if (count == 0) {
            return;
        }
        requireWritable("dst", dst);
        long done = vector ? VectorKernels.scale(type, dst, dstOffset, src, srcOffset, bytes, scalar) : 0;
        if (done < bytes) {
            ScalarKernels.scale(type, dst, dstOffset + done, src, srcOffset + done, (bytes - done) / type.byteSize(),
                    scalar);
        }
    }

    /**
     * {@code dst[i] = xScale * x[i] + yScale * y[i]} for {@code count} floating-point elements: inputs of a
     * pre-multiplied sum folded as they are read, with the same bits as {@link #scale} of each operand followed by a
     * {@link ReduceOp#SUM} (each product rounds to the type, then the sum does; a scale of 1 leaves its operand as
     * it is). {@code dst} may be {@code x} or {@code y}. float32, float64 and bfloat16 run on the Vector API in one
     * pass; float16 is staged through arrays, a chunk at a time.
     *
     * @throws IllegalArgumentException for an integer type
     */
    public static void scaledSum(DataType type, MemorySegment dst, long dstOffset, MemorySegment x, long xOffset,
            double xScale, MemorySegment y, long yOffset, double yScale, long count) {
        scaledSum(VECTOR, type, dst, dstOffset, x, xOffset, xScale, y, yOffset, yScale, count);
    }

    static void scaledSum(boolean vector, DataType type, MemorySegment dst, long dstOffset, MemorySegment x,
            long xOffset, double xScale, MemorySegment y, long yOffset, double yScale, long count) {
        Objects.requireNonNull(type, "type");
        if (!type.isFloatingPoint()) {
            throw new IllegalArgumentException("scaledSum: floating-point types only, not " + type.canonicalName());
        }
        long bytes = byteCount(type, count);
        checkRange("dst", dst, dstOffset, bytes);
        checkRange("x", x, xOffset, bytes);
        checkRange("y", y, yOffset, bytes);
        if (count == 0) {
            return;
        }
        requireWritable("dst", dst);
        int e = type.byteSize();
        long start = 0;
        if (vector && bytes >= VectorKernels.vectorBytes()) {
            start = VectorKernels.scaledSum(type, dst, dstOffset, x, xOffset, xScale, y, yOffset, yScale, bytes) / e;
        }
        if (start < count) {
            // float16 (staged through arrays) and the vectors' tail.
            long at = start * e;
            switch (type) {
                case FLOAT32, FLOAT64 -> ScalarKernels.scaledSum(type, dst, dstOffset + at, x, xOffset + at, xScale,
                        y, yOffset + at, yScale, count - start);
                default -> ScalarKernels.scaledSum16(type, dst, dstOffset + at, x, xOffset + at, xScale, y,
                        yOffset + at, yScale, count - start);
            }
        }
    }

    private static long byteCount(DataType type, long count) {
        if (count < 0) {
            throw new IllegalArgumentException("element count must be >= 0: " + count);
        }
        try {
            return Math.multiplyExact(count, (long) type.byteSize());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("element count too large: " + count + " elements of "
                    + type.canonicalName());
        }
    }

    private static void requireWritable(String name, MemorySegment s) {
        if (s.isReadOnly()) {
            throw new UnsupportedOperationException("reduction operand '" + name + "' is the destination and must be"
                    + " writable, but its segment of " + s.byteSize() + " bytes is read-only");
        }
    }

    private static void checkRange(String name, MemorySegment s, long offset, long bytes) {
        Objects.requireNonNull(s, name);
        if (offset < 0 || offset > s.byteSize() - bytes) {
            throw new IndexOutOfBoundsException("reduction operand '" + name + "': " + bytes + " bytes at offset "
                    + offset
                    + " exceed the segment of " + s.byteSize() + " bytes");
        }
    }
}
