package dev.panamax.cuda;

import dev.panamax.memory.DataType;
import dev.panamax.memory.Half;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.Reductions;
import dev.panamax.testing.GpuTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The GPU kernels against the host {@link Reductions} on the same data, element by element and bit for bit: the
 * integer types wrap the same way, f32 and f64 do one IEEE operation per element on both sides, and f16/bf16
 * compute in float and round to nearest-even on both sides ({@code cvt.rn} on the device, {@link Half} on the
 * host). NaN payloads are not specified, so two NaNs match whatever their bits. The elements around the
 * range are compared too: they must be left alone.
 */
@GpuTest
class ReductionKernelsTest {
    private static final long[] COUNTS = {0, 1, 7, 4097, (1 << 20) + 3};
    /** Element offsets of inout and in: aligned, misaligned alike (16-byte packs in the middle), misaligned apart. */
    private static final int[][] OFFSETS = {{0, 0}, {1, 1}, {3, 3}, {1, 3}};
    /** Elements after the range that are copied and compared as well. */
    private static final int GUARD = 16;
    private static final int AVG_DIVISOR = 3;

    private static CudaContext context;
    private static ReductionKernels kernels;

    /** One context and module for the class: loading compiles 40 kernels. Skips without a GPU. */
    private static ReductionKernels kernels() {
        CudaTestDevice.device();
        if (kernels == null) {
            context = CudaTestDevice.context();
            kernels = ReductionKernels.load(context);
        }
        return kernels;
    }

    @AfterAll
    static void closeContext() {
        if (context != null) {
            context.close();
        }
    }

    static Stream<Arguments> opsAndTypes() {
        List<Arguments> all = new ArrayList<>();
        for (ReduceOp op : ReduceOp.values()) {
            for (DataType type : DataType.values()) {
                all.add(Arguments.of(op, type));
            }
        }
        return all.stream();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("opsAndTypes")
    void matchesTheHostReductionsElementByElement(ReduceOp op, DataType type) {
        ReductionKernels k = kernels();
        Random random = new Random(31L * op.ordinal() + type.ordinal());
        try (CudaStream stream = context.createStream()) {
            for (long count : COUNTS) {
                for (int[] offsets : OFFSETS) {
                    check(k, stream, random, op, type, count, offsets[0], offsets[1], false);
                }
            }
            // in == inout: SUM doubles, PROD squares, MIN and MAX keep the value.
            check(k, stream, random, op, type, 4097, 1, 1, true);
            check(k, stream, random, op, type, (1 << 20) + 3, 3, 3, true);
        }
    }

    /**
     * Fills both operands (with {@code off} elements before and {@link #GUARD} after the range) with random data,
     * runs the kernel ({@code reduce}, and {@code divide} for AVG) and compares all of inout with the host result.
     */
    private static void check(ReductionKernels k, CudaStream stream, Random random, ReduceOp op, DataType type,
                              long count, int inoutOffset, int inOffset, boolean aliased) {
        int es = type.byteSize();
        long inoutBytes = (inoutOffset + count + GUARD) * es;
        long inBytes = (inOffset + count + GUARD) * es;
        String what = op + " " + type + ", count " + count + ", element offsets " + inoutOffset + "/" + inOffset
                + (aliased ? ", in == inout" : "");
        try (Arena arena = Arena.ofConfined();
             DeviceMemory dInout = context.allocate(inoutBytes);
             DeviceMemory dIn = context.allocate(inBytes)) {
            MemorySegment hInout = arena.allocate(inoutBytes, 16);
            MemorySegment hIn = arena.allocate(inBytes, 16);
            fillRandom(type, hInout, random);
            fillRandom(type, hIn, random);
            dInout.copyFromHost(hInout);
            dIn.copyFromHost(hIn);
            DeviceMemory x = dInout.slice(inoutOffset * es, count * es);
            DeviceMemory y = aliased ? x : dIn.slice(inOffset * es, count * es);
            k.reduce(op, type, x, y, count, stream);
            if (op == ReduceOp.AVG) {
                k.divide(type, x, count, AVG_DIVISOR, stream);
            }
            stream.synchronize();
            MemorySegment actual = arena.allocate(inoutBytes, 16);
            dInout.copyToHost(actual);

            MemorySegment expected = arena.allocate(inoutBytes, 16).copyFrom(hInout);
            if (aliased) {
                Reductions.accumulate(type, op, expected, inoutOffset * es, expected, inoutOffset * es, count);
            } else {
                Reductions.accumulate(type, op, expected, inoutOffset * es, hIn, inOffset * es, count);
            }
            if (op == ReduceOp.AVG) {
                Reductions.divide(type, expected, inoutOffset * es, count, AVG_DIVISOR);
            }
            assertSameElements(type, expected, actual, inoutOffset, what);
        }
    }

    @ParameterizedTest
    @EnumSource(DataType.class)
    void divideMatchesTheHost(DataType type) {
        ReductionKernels k = kernels();
        Random random = new Random(1000 + type.ordinal());
        int es = type.byteSize();
        int[] divisors = {1, 2, 3, 7, 255, 1000, Integer.MAX_VALUE};
        try (CudaStream stream = context.createStream(); Arena arena = Arena.ofConfined()) {
            for (long count : new long[] {7, 4097, (1 << 20) + 3}) {
                for (int offset : new int[] {0, 1}) {
                    for (int divisor : divisors) {
                        long bytes = (offset + count + GUARD) * es;
                        try (DeviceMemory d = context.allocate(bytes)) {
                            MemorySegment host = arena.allocate(bytes, 16);
                            fillRandom(type, host, random);
                            d.copyFromHost(host);
                            k.divide(type, d.slice(offset * es, count * es), count, divisor, stream);
                            stream.synchronize();
                            MemorySegment actual = arena.allocate(bytes, 16);
                            d.copyToHost(actual);
                            Reductions.divide(type, host, offset * es, count, divisor);
                            assertSameElements(type, host, actual, offset,
                                    "divide " + type + ", count " + count + ", offset " + offset + ", by " + divisor);
                        }
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = DataType.class, names = {"FLOAT32", "FLOAT64", "FLOAT16", "BFLOAT16"})
    void minAndMaxPropagateNanAndOrderSignedZeros(DataType type) {
        ReductionKernels k = kernels();
        double[] values = {Double.NaN, -0.0, 0.0, 1.0, -1.0, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY};
        int n = values.length * values.length;
        int es = type.byteSize();
        try (CudaStream stream = context.createStream(); Arena arena = Arena.ofConfined()) {
            for (ReduceOp op : new ReduceOp[] {ReduceOp.MIN, ReduceOp.MAX}) {
                for (int[] offsets : OFFSETS) {
                    long inoutBytes = (offsets[0] + n + GUARD) * es;
                    long inBytes = (offsets[1] + n + GUARD) * es;
                    MemorySegment hInout = arena.allocate(inoutBytes, 16);
                    MemorySegment hIn = arena.allocate(inBytes, 16);
                    for (int i = 0; i < n; i++) {
                        type.setFromDouble(hInout, offsets[0] * es, i, values[i / values.length]);
                        type.setFromDouble(hIn, offsets[1] * es, i, values[i % values.length]);
                    }
                    try (DeviceMemory dInout = context.allocate(inoutBytes); DeviceMemory dIn =
                            context.allocate(inBytes)) {
                        dInout.copyFromHost(hInout);
                        dIn.copyFromHost(hIn);
                        k.reduce(op, type, dInout.slice(offsets[0] * es, n * es), dIn.slice(offsets[1] * es, n * es),
                                n, stream);
                        stream.synchronize();
                        MemorySegment actual = arena.allocate(inoutBytes, 16);
                        dInout.copyToHost(actual);
                        MemorySegment expected = arena.allocate(inoutBytes, 16).copyFrom(hInout);
                        Reductions.accumulate(type, op, expected, offsets[0] * es, hIn, offsets[1] * es, n);
                        String what = op + " " + type + " on NaN, zeros and infinities, offsets " + offsets[0] + "/"
                                + offsets[1];
                        assertSameElements(type, expected, actual, offsets[0], what);
                        // The semantics themselves, not only agreement with the host.
                        for (int i = 0; i < n; i++) {
                            double a = values[i / values.length];
                            double b = values[i % values.length];
                            double got = type.getAsDouble(actual, offsets[0] * es, i);
                            double want = op == ReduceOp.MIN ? Math.min(a, b) : Math.max(a, b);
                            assertEquals(Double.doubleToLongBits(want), Double.doubleToLongBits(got),
                                    what + ": " + op + "(" + a + ", " + b + ") gave " + got);
                        }
                    }
                }
            }
        }
    }

    @Test
    void closingTheContextUnloadsTheKernelsOnce() {
        CudaTestDevice.device();
        try (CudaContext own = CudaTestDevice.context()) {
            ReductionKernels loaded = ReductionKernels.load(own);
            assertTrue(loaded.isOpen());
            assertEquals(own, loaded.context());
            loaded.close();
            assertFalse(loaded.isOpen());
            loaded.close(); // does nothing
            try (CudaStream stream = own.createStream(); DeviceMemory m = own.allocate(64)) {
                IllegalStateException e = assertThrows(IllegalStateException.class,
                        () -> loaded.reduce(ReduceOp.SUM, DataType.FLOAT32, m, m, 16, stream));
                assertTrue(e.getMessage().startsWith("reduction kernels (reduce.ptx) in primary context of device"),
                        e.getMessage());
            }
            ReductionKernels second = ReductionKernels.load(own);
            own.close();
            assertFalse(second.isOpen(), "the context's close unloads the module");
            second.close(); // already unloaded by the context: does nothing
        }
    }

    @Test
    void launchesOnAStreamOfAnotherContextAreRejected() {
        ReductionKernels k = kernels();
        try (CudaContext other = CudaTestDevice.context(); CudaStream stream = other.createStream();
             DeviceMemory m = context.allocate(64)) {
            // Another retain of the same primary context is still another CudaContext object: ownership is per object.
            assertThrows(IllegalArgumentException.class,
                    () -> k.reduce(ReduceOp.SUM, DataType.FLOAT32, m, m, 16, stream));
        }
    }

    /** Random elements: half raw bit patterns (any exponent, NaNs included), half moderate values. */
    private static void fillRandom(DataType type, MemorySegment s, Random random) {
        long n = s.byteSize() / type.byteSize();
        switch (type) {
            case INT8, UINT8, INT32, INT64 -> {
                byte[] bytes = new byte[(int) s.byteSize()];
                random.nextBytes(bytes);
                MemorySegment.copy(bytes, 0, s, ValueLayout.JAVA_BYTE, 0, bytes.length);
            }
            case FLOAT32 -> {
                for (long i = 0; i < n; i++) {
                    float v = i % 2 == 0 ? Float.intBitsToFloat(random.nextInt()) : (float) moderate(random);
                    s.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, v);
                }
            }
            case FLOAT64 -> {
                for (long i = 0; i < n; i++) {
                    double v = i % 2 == 0 ? Double.longBitsToDouble(random.nextLong()) : moderate(random);
                    s.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i, v);
                }
            }
            case FLOAT16, BFLOAT16 -> {
                for (long i = 0; i < n; i++) {
                    short v;
                    if (i % 2 == 0) {
                        v = (short) random.nextInt();
                    } else {
                        float f = (float) moderate(random);
                        v = type == DataType.FLOAT16 ? Half.floatToFloat16(f) : Half.floatToBfloat16(f);
                    }
                    s.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, v);
                }
            }
        }
    }

    /** A value of either sign between 2^-8 and 2^8 in magnitude, with all mantissa bits random. */
    private static double moderate(Random random) {
        return (random.nextBoolean() ? 1 : -1) * (1 + random.nextDouble()) * Math.scalb(1.0, random.nextInt(17) - 8);
    }

    /** Compares every element of two same-sized segments by bits; two NaNs of a floating type match. */
    private static void assertSameElements(DataType type, MemorySegment expected, MemorySegment actual,
                                           int rangeOffset, String what) {
        assertEquals(expected.byteSize(), actual.byteSize());
        int es = type.byteSize();
        long n = expected.byteSize() / es;
        for (long i = 0; i < n; i++) {
            long e = bits(type, expected, i);
            long a = bits(type, actual, i);
            if (e != a && !(isNaN(type, e) && isNaN(type, a))) {
                fail(what + ": element " + (i - rangeOffset) + " of the range (" + i + " of the buffer): expected "
                        + describe(type, expected, i, e) + ", got " + describe(type, actual, i, a));
            }
        }
    }

    private static long bits(DataType type, MemorySegment s, long i) {
        return switch (type.byteSize()) {
            case 1 -> s.get(ValueLayout.JAVA_BYTE, i) & 0xffL;
            case 2 -> s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i) & 0xffffL;
            case 4 -> s.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i) & 0xffffffffL;
            default -> s.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
        };
    }

    private static boolean isNaN(DataType type, long bits) {
        return switch (type) {
            case FLOAT32 -> Float.isNaN(Float.intBitsToFloat((int) bits));
            case FLOAT64 -> Double.isNaN(Double.longBitsToDouble(bits));
            case FLOAT16 -> (bits & 0x7fff) > 0x7c00;
            case BFLOAT16 -> (bits & 0x7fff) > 0x7f80;
            default -> false;
        };
    }

    private static String describe(DataType type, MemorySegment s, long i, long bits) {
        String value = type.isFloatingPoint() ? Double.toString(type.getAsDouble(s, 0, i))
                : Long.toString(type.getAsLong(s, 0, i));
        return value + " (0x" + Long.toHexString(bits) + ")";
    }
}
