package dev.panamax.memory;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import java.util.Arrays;

/**
 * Every type x op x count x offset against {@link Reference}, for both kernel implementations
 * (Vector API and plain Java), through reduce (separate dst, dst aliasing a, dst aliasing b).
 */
class ReductionsTest {
    static final long[] COUNTS = {0, 1, 7, 8, 9, 31, 1000, 4097, 100_003};
    private static final byte GUARD = (byte) 0xA5;

    /** Byte offsets of dst, a, b: zero; element-aligned odd element offsets; odd byte offsets. */
    static long[][] offsets(DataType t) {
        int s = t.byteSize();
        return new long[][]{{0, 0, 0}, {3L * s, 5L * s, 1L * s}, {1, 3, 5 + 2L * s}};
    }

    enum Mode { SEPARATE, DST_IS_A, DST_IS_B }

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (boolean vector : new boolean[]{true, false}) {
            for (DataType t : DataType.values()) {
                for (ReduceOp op : ReduceOp.values()) {
                    out.add(Arguments.of(vector, t, op));
                }
            }
        }
        return out.stream();
    }

    /** Random element bits with special values mixed in (NaN, infinities, signed zeros, subnormals, extremes). */
    static void fill(DataType t, MemorySegment s, long off, long n, SplittableRandom rnd) {
        for (long i = 0; i < n; i++) {
            long p = off + i * t.byteSize();
            boolean special = rnd.nextInt(16) == 0;
            switch (t) {
                case FLOAT32 -> s.set(ValueLayout.JAVA_FLOAT_UNALIGNED, p, special
                        ? new float[]{Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 0f, -0f,
                        Float.MIN_VALUE,
                        -Float.MIN_NORMAL, Float.MAX_VALUE, -Float.MAX_VALUE}[rnd.nextInt(9)]
                        : (float) ((rnd.nextDouble() - 0.5) * Math.scalb(1.0, rnd.nextInt(-30, 30))));
                case FLOAT64 -> s.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, p, special
                        ? new double[]{Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 0d, -0d,
                        Double.MIN_VALUE,
                        -Double.MIN_NORMAL, Double.MAX_VALUE, -Double.MAX_VALUE}[rnd.nextInt(9)]
                        : (rnd.nextDouble() - 0.5) * Math.scalb(1.0, rnd.nextInt(-100, 100)));
                case INT32 -> s.set(ValueLayout.JAVA_INT_UNALIGNED, p, special
                        ? new int[]{Integer.MAX_VALUE, Integer.MIN_VALUE, -1, 0}[rnd.nextInt(4)] : rnd.nextInt());
                case INT64 -> s.set(ValueLayout.JAVA_LONG_UNALIGNED, p, special
                        ? new long[]{Long.MAX_VALUE, Long.MIN_VALUE, -1, 0}[rnd.nextInt(4)] : rnd.nextLong());
                case INT8, UINT8 -> s.set(ValueLayout.JAVA_BYTE, p, (byte) rnd.nextInt());
                case FLOAT16, BFLOAT16 -> s.set(ValueLayout.JAVA_SHORT_UNALIGNED, p, (short) rnd.nextInt());
            }
        }
    }

    @ParameterizedTest(name = "vector={0} {1} {2}")
    @MethodSource("cases")
    void reduceMatchesReference(boolean vector, DataType t, ReduceOp op) {
        if (vector && !Reductions.isVectorized()) {
            fail("the Vector API kernels are unavailable: run the tests with --add-modules jdk.incubator.vector "
                    + "(memory/pom.xml does)");
        }
        SplittableRandom rnd = new SplittableRandom(t.ordinal() * 31L + op.ordinal());
        int s = t.byteSize();
        for (long n : COUNTS) {
            for (long[] off : offsets(t)) {
                for (Mode mode : Mode.values()) {
                    try (Arena arena = Arena.ofConfined()) {
                        long size = n * s + 64;
                        MemorySegment a = arena.allocate(size, 64), b = arena.allocate(size, 64),
                                dst = arena.allocate(size, 64);
                        fill(t, a, off[1], n, rnd);
                        fill(t, b, off[2], n, rnd);
                        dst.fill(GUARD);
                        MemorySegment ea = MemorySegment.ofArray(a.toArray(ValueLayout.JAVA_BYTE));
                        MemorySegment eb = MemorySegment.ofArray(b.toArray(ValueLayout.JAVA_BYTE));
                        MemorySegment d = dst;
                        long dOff = off[0];
                        switch (mode) {
                            case SEPARATE -> Reductions.reduce(vector, t, op, dst, off[0], a, off[1], b, off[2], n);
                            case DST_IS_A -> { d = a; dOff = off[1]; Reductions.reduce(vector, t, op, a, off[1], a,
                                    off[1], b, off[2], n); }
                            case DST_IS_B -> { d = b; dOff = off[2]; Reductions.reduce(vector, t, op, b, off[2], a,
                                    off[1], b, off[2], n); }
                        }
                        String what = t + " " + op + " n=" + n + " offsets=" + Arrays.toString(off) + " " + mode
                                + " vector=" + vector;
                        for (long i = 0; i < n; i++) {
                            long want = Reference.expected(t, op, ea, off[1], eb, off[2], i);
                            long got = Reference.raw(t, d, dOff, i);
                            if (want != got && !(Reference.isNaN(t, want) && Reference.isNaN(t, got))) {
                                fail(what + ": element " + i + " is 0x" + Long.toHexString(got) + ", expected 0x"
                                        + Long.toHexString(want)
                                        + " (a=0x" + Long.toHexString(Reference.raw(t, ea, off[1], i)) + ", b=0x"
                                        + Long.toHexString(Reference.raw(t, eb, off[2], i)) + ")");
                            }
                        }
                        if (mode == Mode.SEPARATE) {
                            for (long p = 0; p < size; p++) {
                                if ((p < dOff || p >= dOff + n * s) && dst.get(ValueLayout.JAVA_BYTE, p) != GUARD) {
                                    fail(what + ": byte " + p + " outside the destination range was written");
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /** A large run per fast-path type through the public API (the default implementation). */
    @ParameterizedTest
    @EnumSource(value = DataType.class, names = {"FLOAT32", "FLOAT64", "INT32", "INT64", "BFLOAT16"})
    void largeAccumulateSum(DataType t) {
        long n = (1 << 22) + 5;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment acc = arena.allocate(n * t.byteSize() + t.byteSize()), src = arena.allocate(n * t.byteSize());
            SplittableRandom rnd = new SplittableRandom(42);
            fill(t, acc, t.byteSize(), n, rnd);
            fill(t, src, 0, n, rnd);
            MemorySegment before = MemorySegment.ofArray(acc.toArray(ValueLayout.JAVA_BYTE));
            Reductions.accumulate(t, ReduceOp.SUM, acc, t.byteSize(), src, 0, n);
            for (long i = 0; i < n; i++) {
                long want = Reference.expected(t, ReduceOp.SUM, before, t.byteSize(), src, 0, i);
                long got = Reference.raw(t, acc, t.byteSize(), i);
                if (want != got && !(Reference.isNaN(t, want) && Reference.isNaN(t, got))) {
                    fail(t + " element " + i + ": 0x" + Long.toHexString(got) + " != 0x" + Long.toHexString(want));
                }
            }
        }
    }

    @ParameterizedTest(name = "vector={0} {1}")
    @MethodSource("divideCases")
    void divideMatchesReference(boolean vector, DataType t) {
        SplittableRandom rnd = new SplittableRandom(7 + t.ordinal());
        for (int divisor : new int[]{1, 2, 3, 7, 1000}) {
            for (long n : COUNTS) {
                for (long off : new long[]{0, 3L * t.byteSize(), 1}) {
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment s = arena.allocate(n * t.byteSize() + 32);
                        fill(t, s, off, n, rnd);
                        MemorySegment before = MemorySegment.ofArray(s.toArray(ValueLayout.JAVA_BYTE));
                        Reductions.divide(vector, t, s, off, n, divisor);
                        for (long i = 0; i < n; i++) {
                            long want = Reference.expectedDivide(t, before, off, i, divisor);
                            long got = Reference.raw(t, s, off, i);
                            if (want != got && !(Reference.isNaN(t, want) && Reference.isNaN(t, got))) {
                                fail(t + " / " + divisor + " n=" + n + " off=" + off + " element " + i + ": 0x"
                                        + Long.toHexString(got)
                                        + " != 0x" + Long.toHexString(want));
                            }
                        }
                    }
                }
            }
        }
    }

    @ParameterizedTest(name = "vector={0} {1}")
    @MethodSource("divideCases")
    void scaleMultipliesInTheTypesPrecision(boolean vector, DataType t) {
        if (!t.isFloatingPoint()) {
            MemorySegment s = Arena.ofAuto().allocate(64);
            assertThrows(IllegalArgumentException.class, () -> Reductions.scale(vector, t, s, 0, s, 0, 4, 2));
            return;
        }
        SplittableRandom rnd = new SplittableRandom(11 + t.ordinal());
        for (double scalar : new double[]{1, 0.25, -3, 1.0 / 3}) {
            for (long n : COUNTS) {
                // Byte offsets of src and dst, apart so that one taken for the other shows.
                for (long[] off : new long[][]{{0, 3L * t.byteSize()}, {3L * t.byteSize(), 1}, {1, 0}}) {
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment src = arena.allocate(n * t.byteSize() + 32);
                        MemorySegment dst = arena.allocate(n * t.byteSize() + 32);
                        fill(t, src, off[0], n, rnd);
                        Reductions.scale(vector, t, dst, off[1], src, off[0], n, scalar);
                        long end = off[1] + n * t.byteSize();
                        for (long b = 0; b < dst.byteSize(); b++) {
                            if ((b < off[1] || b >= end) && dst.get(ValueLayout.JAVA_BYTE, b) != 0) {
                                fail(t + " * " + scalar + " n=" + n + " offsets=" + Arrays.toString(off)
                                        + ": byte " + b + " outside dst's range written");
                            }
                        }
                        for (long i = 0; i < n; i++) {
                            double x = t.getAsDouble(src, off[0], i);
                            double want = switch (t) {
                                case FLOAT64 -> x * scalar;
                                case FLOAT32 -> (float) x * (float) scalar;
                                case BFLOAT16 -> Half.bfloat16ToFloat(Half.floatToBfloat16((float) x * (float) scalar));
                                default -> Float.float16ToFloat(Float.floatToFloat16((float) x * (float) scalar));
                            };
                            double got = t.getAsDouble(dst, off[1], i);
                            if (Double.compare(want, got) != 0 && !(Double.isNaN(want) && Double.isNaN(got))) {
                                fail(t + " * " + scalar + " n=" + n + " offsets=" + Arrays.toString(off) + " element "
                                        + i + ": " + got + " != " + want);
                            }
                        }
                    }
                }
            }
        }
    }

    @ParameterizedTest(name = "vector={0} {1}")
    @MethodSource("divideCases")
    void scaledSumHasTheBitsOfScalingThenSumming(boolean vector, DataType t) {
        MemorySegment small = Arena.ofAuto().allocate(64);
        if (!t.isFloatingPoint()) {
            assertThrows(IllegalArgumentException.class,
                    () -> Reductions.scaledSum(vector, t, small, 0, small, 0, 2, small, 0, 1, 4));
            return;
        }
        assertThrows(IndexOutOfBoundsException.class,
                () -> Reductions.scaledSum(vector, t, small, 0, small, 0, 2, small, 8, 1, 64 / t.byteSize()));
        SplittableRandom rnd = new SplittableRandom(29 + t.ordinal());
        int e = t.byteSize();
        double[][] scales = {{0.25, 1}, {1, -3}, {1.0 / 7, 0.3}};
        for (double[] ab : scales) {
            for (long n : COUNTS) {
                for (String alias : new String[]{"none", "dst=x", "dst=y"}) {
                    try (Arena arena = Arena.ofConfined()) {
                        long off = e;
                        MemorySegment x = arena.allocate(n * e + 32);
                        MemorySegment y = arena.allocate(n * e + 32);
                        fill(t, x, off, n, rnd);
                        fill(t, y, off, n, rnd);
                        MemorySegment want = arena.allocate(n * e + 32);
                        MemorySegment scaledY = arena.allocate(n * e + 32);
                        Reductions.scale(t, want, off, x, off, n, ab[0]);
                        Reductions.scale(t, scaledY, off, y, off, n, ab[1]);
                        Reductions.reduce(t, ReduceOp.SUM, want, off, want, off, scaledY, off, n);
                        MemorySegment dst = switch (alias) {
                            case "dst=x" -> x;
                            case "dst=y" -> y;
                            default -> arena.allocate(n * e + 32);
                        };
                        Reductions.scaledSum(vector, t, dst, off, x, off, ab[0], y, off, ab[1], n);
                        for (long i = 0; i < n; i++) {
                            double w = t.getAsDouble(want, off, i);
                            double g = t.getAsDouble(dst, off, i);
                            if (Double.compare(w, g) != 0 && !(Double.isNaN(w) && Double.isNaN(g))) {
                                fail(t + " " + ab[0] + " * x + " + ab[1] + " * y, n=" + n + " (" + alias
                                        + ") element " + i + ": " + g + " != " + w);
                            }
                        }
                    }
                }
            }
        }
    }

    static Stream<Arguments> divideCases() {
        return Stream.of(true, false).flatMap(v -> Stream.of(DataType.values()).map(t -> Arguments.of(v, t)));
    }

    @ParameterizedTest
    @EnumSource(DataType.class)
    void avgIsSumThenDivide(DataType t) {
        int ranks = 3, n = 1003;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment[] in = new MemorySegment[ranks];
            SplittableRandom rnd = new SplittableRandom(3);
            for (int r = 0; r < ranks; r++) {
                in[r] = arena.allocate((long) n * t.byteSize());
                for (int i = 0; i < n; i++) {
                    t.setFromDouble(in[r], 0, i, rnd.nextInt(0, 40));
                }
            }
            MemorySegment avg = arena.allocate((long) n * t.byteSize());
            Reductions.reduce(t, ReduceOp.AVG, avg, 0, in[0], 0, in[1], 0, n);
            Reductions.accumulate(t, ReduceOp.AVG, avg, 0, in[2], 0, n);
            Reductions.divide(t, avg, 0, n, ranks);
            for (int i = 0; i < n; i++) {
                double sum = 0;
                for (MemorySegment m : in) sum += t.getAsDouble(m, 0, i);
                double want = t == DataType.FLOAT64 ? sum / ranks : t.isFloatingPoint() ? (float) sum / ranks
                        : Math.floor(sum / ranks);
                assertEquals(t == DataType.BFLOAT16 ? Half.bfloat16ToFloat(Half.floatToBfloat16((float) want))
                        : t == DataType.FLOAT16 ? Half.float16ToFloat(Half.floatToFloat16((float) want)) : want,
                        t.getAsDouble(avg, 0, i), t + " element " + i);
            }
        }
    }

    /** Every float16/bfloat16 bit pattern against several partners, per op, both implementations. */
    @ParameterizedTest(name = "vector={0}")
    @ValueSource(booleans = {true, false})
    void halfPrecisionAllBitPatterns(boolean vector) {
        int n = 1 << 16;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(2L * n), b = arena.allocate(2L * n), d = arena.allocate(2L * n);
            SplittableRandom rnd = new SplittableRandom(11);
            for (DataType t : new DataType[]{DataType.FLOAT16, DataType.BFLOAT16}) {
                for (int partner = 0; partner < 8; partner++) {
                    for (int i = 0; i < n; i++) {
                        a.setAtIndex(ValueLayout.JAVA_SHORT, i, (short) i);
                        int q = switch (partner) {
                            case 0 -> i ^ 1;                 // neighbours: sums at halfway points
                            case 1 -> i + 0x0400;            // next binade (float16)
                            case 2 -> i + 0x0080;            // next binade (bfloat16)
                            case 3 -> i ^ 0x8000;            // opposite sign
                            case 4 -> 0x3c00;                // float16 1.0
                            case 5 -> 0x3f80;                // bfloat16 1.0
                            case 6 -> i >>> 3;
                            default -> rnd.nextInt();
                        };
                        b.setAtIndex(ValueLayout.JAVA_SHORT, i, (short) q);
                    }
                    for (ReduceOp op : new ReduceOp[]{ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MIN, ReduceOp.MAX}) {
                        Reductions.reduce(vector, t, op, d, 0, a, 0, b, 0, n);
                        for (int i = 0; i < n; i++) {
                            long want = Reference.expected(t, op, a, 0, b, 0, i), got = Reference.raw(t, d, 0, i);
                            if (want != got && !(Reference.isNaN(t, want) && Reference.isNaN(t, got))) {
                                fail(t + " " + op + " partner " + partner + ": 0x"
                                        + Long.toHexString(Reference.raw(t, a, 0, i)) + " op 0x"
                                        + Long.toHexString(Reference.raw(t, b, 0, i)) + " = 0x" + Long.toHexString(got)
                                        + ", expected 0x" + Long.toHexString(want));
                            }
                        }
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void integersWrapAround(boolean vector) {
        assertEquals(Integer.MIN_VALUE, (int) one(vector, DataType.INT32, ReduceOp.SUM, Integer.MAX_VALUE, 1));
        assertEquals(Integer.MAX_VALUE, (int) one(vector, DataType.INT32, ReduceOp.SUM, Integer.MIN_VALUE, -1));
        assertEquals(Integer.MAX_VALUE * 3, (int) one(vector, DataType.INT32, ReduceOp.PROD, Integer.MAX_VALUE, 3));
        assertEquals(Long.MIN_VALUE, one(vector, DataType.INT64, ReduceOp.SUM, Long.MAX_VALUE, 1));
        assertEquals(Long.MAX_VALUE * 5, one(vector, DataType.INT64, ReduceOp.PROD, Long.MAX_VALUE, 5));
        assertEquals(-128, (byte) one(vector, DataType.INT8, ReduceOp.SUM, 127, 1));
        assertEquals((byte) (100 * 3), (byte) one(vector, DataType.INT8, ReduceOp.PROD, 100, 3));
        assertEquals(0, one(vector, DataType.UINT8, ReduceOp.SUM, 255, 1) & 0xff);
        assertEquals((200 * 2) & 0xff, one(vector, DataType.UINT8, ReduceOp.PROD, 200, 2) & 0xff);
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void uint8ComparesUnsigned(boolean vector) {
        assertEquals(100, one(vector, DataType.UINT8, ReduceOp.MIN, 200, 100) & 0xff);
        assertEquals(200, one(vector, DataType.UINT8, ReduceOp.MAX, 200, 100) & 0xff);
        assertEquals(0, one(vector, DataType.UINT8, ReduceOp.MIN, 0, 255) & 0xff);
        assertEquals(255, one(vector, DataType.UINT8, ReduceOp.MAX, 0, 255) & 0xff);
        assertEquals(-56, (byte) one(vector, DataType.INT8, ReduceOp.MIN, (byte) 200, 100), "int8 compares signed");
    }

    /** Float MIN/MAX: NaN in either operand gives NaN; -0.0 < +0.0 (Math.min/max). */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void floatMinMaxPropagateNaN(boolean vector) {
        for (DataType t : new DataType[]{DataType.FLOAT32, DataType.FLOAT64, DataType.FLOAT16, DataType.BFLOAT16}) {
            for (ReduceOp op : new ReduceOp[]{ReduceOp.MIN, ReduceOp.MAX}) {
                assertTrue(Double.isNaN(oneD(vector, t, op, Double.NaN, 1)), t + " " + op + "(NaN, 1)");
                assertTrue(Double.isNaN(oneD(vector, t, op, 1, Double.NaN)), t + " " + op + "(1, NaN)");
                assertTrue(Double.isNaN(oneD(vector, t, op, Double.NaN, Double.NaN)), t + " " + op + "(NaN, NaN)");
            }
            assertEquals(-0.0, oneD(vector, t, ReduceOp.MIN, 0.0, -0.0), t + " min(+0, -0)");
            assertEquals(0.0, oneD(vector, t, ReduceOp.MAX, -0.0, 0.0), t + " max(-0, +0)");
            assertEquals(Double.NEGATIVE_INFINITY, oneD(vector, t, ReduceOp.MIN, Double.NEGATIVE_INFINITY, 1),
                    t + " min(-inf, 1)");
            assertTrue(Double.isNaN(oneD(vector, t, ReduceOp.SUM, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY)),
                    t + " inf + -inf");
        }
    }

    /** Applies op to a run of identical pairs long enough for the vector path; returns element 100 as a long. */
    private static long one(boolean vector, DataType t, ReduceOp op, long p, long q) {
        int n = 301;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate((long) n * t.byteSize()), b = arena.allocate((long) n * t.byteSize());
            for (int i = 0; i < n; i++) {
                set(t, a, i, p);
                set(t, b, i, q);
            }
            Reductions.reduce(vector, t, op, a, 0, a, 0, b, 0, n);
            long first = t.getAsLong(a, 0, 0);
            for (int i = 1; i < n; i++) assertEquals(first, t.getAsLong(a, 0, i), "element " + i);
            return t == DataType.UINT8 ? first : t.getAsLong(a, 0, 100);
        }
    }

    private static void set(DataType t, MemorySegment s, long i, long v) {
        switch (t) {
            case INT32 -> s.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, (int) v);
            case INT64 -> s.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, v);
            default -> s.set(ValueLayout.JAVA_BYTE, i, (byte) v);
        }
    }

    private static double oneD(boolean vector, DataType t, ReduceOp op, double p, double q) {
        int n = 301;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate((long) n * t.byteSize()), b = arena.allocate((long) n * t.byteSize());
            for (int i = 0; i < n; i++) {
                t.setFromDouble(a, 0, i, p);
                t.setFromDouble(b, 0, i, q);
            }
            Reductions.reduce(vector, t, op, a, 0, a, 0, b, 0, n);
            double first = t.getAsDouble(a, 0, 0);
            for (int i = 1; i < n; i++) {
                assertEquals(Double.doubleToLongBits(first), Double.doubleToLongBits(t.getAsDouble(a, 0, i)),
                        t + " " + op + " element " + i);
            }
            return first;
        }
    }

    @Test
    void outOfRangeOffsetsThrowWithClearMessage() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(64), small = arena.allocate(16);
            var e = assertThrows(IndexOutOfBoundsException.class,
                    () -> Reductions.reduce(DataType.FLOAT32, ReduceOp.SUM, s, 0, s, 0, small, 4, 4));
            assertTrue(e.getMessage().contains("'b'") && e.getMessage().contains("16 bytes at offset 4")
                    && e.getMessage().contains("segment of 16 bytes"), e.getMessage());
            e = assertThrows(IndexOutOfBoundsException.class,
                    () -> Reductions.reduce(DataType.FLOAT64, ReduceOp.SUM, small, 0, s, 0, s, 0, 3));
            assertTrue(e.getMessage().contains("'dst'"), e.getMessage());
            e = assertThrows(IndexOutOfBoundsException.class,
                    () -> Reductions.accumulate(DataType.INT8, ReduceOp.MAX, s, -1, s, 0, 1));
            assertTrue(e.getMessage().contains("offset -1"), e.getMessage());
            assertThrows(IndexOutOfBoundsException.class, () ->
                    Reductions.accumulate(DataType.INT8, ReduceOp.MAX, s, 0, s, Long.MAX_VALUE, 1));
            assertThrows(IndexOutOfBoundsException.class, () ->
                    Reductions.accumulate(DataType.INT8, ReduceOp.MAX, s, 65, s, 0, 0),
                    "count 0 still checks the offsets");
            e = assertThrows(IndexOutOfBoundsException.class, () -> Reductions.divide(DataType.INT32, s, 4, 16, 2));
            assertTrue(e.getMessage().contains("'segment'"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () ->
                    Reductions.accumulate(DataType.INT32, ReduceOp.SUM, s, 0, s, 0, -1));
            assertThrows(IllegalArgumentException.class, () ->
                    Reductions.accumulate(DataType.INT64, ReduceOp.SUM, s, 0, s, 0, Long.MAX_VALUE / 4));
            assertThrows(IllegalArgumentException.class, () -> Reductions.divide(DataType.INT32, s, 0, 1, 0));
            Reductions.accumulate(DataType.INT8, ReduceOp.MAX, s, 64, s, 0, 0); // empty range at the end is fine
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void closedArenaThrowsIllegalState(boolean vector) {
        Arena arena = Arena.ofConfined();
        MemorySegment s = arena.allocate(4096);
        arena.close();
        try (Arena live = Arena.ofConfined()) {
            MemorySegment ok = live.allocate(4096);
            assertThrows(IllegalStateException.class, () ->
                    Reductions.reduce(vector, DataType.FLOAT32, ReduceOp.SUM, ok, 0, ok, 0, s, 0, 1024));
            assertThrows(IllegalStateException.class, () ->
                    Reductions.reduce(vector, DataType.INT8, ReduceOp.MIN, s, 0, ok, 0, ok, 0, 3));
            assertThrows(IllegalStateException.class, () -> Reductions.divide(vector, DataType.FLOAT64, s, 0, 512, 2));
        }
    }

    @Test
    void readOnlyDestinationThrows() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(4096);
            assertThrows(UnsupportedOperationException.class,
                    () -> Reductions.accumulate(DataType.FLOAT32, ReduceOp.SUM, s.asReadOnly(), 0, s, 0, 1024));
        }
    }

    /** Element counts for the read-only checks: one, fewer than a vector, many vectors and a tail. */
    static final long[] READ_ONLY_COUNTS = {1, 3, 1027};

    static Stream<Arguments> readOnlyCases() {
        List<Arguments> out = new ArrayList<>();
        for (boolean vector : new boolean[]{true, false}) {
            for (DataType t : DataType.values()) {
                for (long count : READ_ONLY_COUNTS) {
                    out.add(Arguments.of(vector, t, count));
                }
            }
        }
        return out.stream();
    }

    /**
     * One exception type for a read-only destination whatever the type and length: the plain loops
     * (short ranges, float16 always) used to throw IllegalArgumentException from MemorySegment.set, the
     * Vector API UnsupportedOperationException.
     */
    @ParameterizedTest(name = "vector={0} {1} count={2}")
    @MethodSource("readOnlyCases")
    void readOnlyDestinationThrowsUnsupportedOperation(boolean vector, DataType t, long count) {
        try (Arena arena = Arena.ofConfined()) {
            long bytes = count * t.byteSize();
            MemorySegment s = arena.allocate(bytes, 64);
            MemorySegment readOnly = s.asReadOnly();
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                    () -> Reductions.reduce(vector, t, ReduceOp.SUM, readOnly, 0, s, 0, s, 0, count));
            assertTrue(e.getMessage().contains("'dst'") && e.getMessage().contains("read-only"), e.getMessage());
            assertThrows(UnsupportedOperationException.class,
                    () -> Reductions.reduce(vector, t, ReduceOp.MAX, readOnly, 0, readOnly, 0, s, 0, count));
            UnsupportedOperationException d = assertThrows(UnsupportedOperationException.class,
                    () -> Reductions.divide(vector, t, readOnly, 0, count, 3));
            assertTrue(d.getMessage().contains("'segment'") && d.getMessage().contains("read-only"), d.getMessage());
            // Dividing by 1 writes nothing, but the destination is checked all the same.
            assertThrows(UnsupportedOperationException.class, () ->
                    Reductions.divide(vector, t, readOnly, 0, count, 1));
        }
    }

    /** The public entry points, with whichever kernels this JVM runs. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(DataType.class)
    void readOnlyDestinationThrowsUnsupportedOperationThroughThePublicMethods(DataType t) {
        try (Arena arena = Arena.ofConfined()) {
            for (long count : READ_ONLY_COUNTS) {
                MemorySegment s = arena.allocate(count * t.byteSize(), 64);
                MemorySegment readOnly = s.asReadOnly();
                assertThrows(UnsupportedOperationException.class,
                        () -> Reductions.accumulate(t, ReduceOp.SUM, readOnly, 0, s, 0, count), "count " + count);
                assertThrows(UnsupportedOperationException.class,
                        () -> Reductions.reduce(t, ReduceOp.MIN, readOnly, 0, s, 0, s, 0, count), "count " + count);
                assertThrows(UnsupportedOperationException.class,
                        () -> Reductions.divide(t, readOnly, 0, count, 2), "count " + count);
            }
        }
    }

    /** A count of 0 writes nothing: it checks the offsets only, and a read-only destination is accepted. */
    @ParameterizedTest(name = "vector={0} {1}")
    @MethodSource("divideCases")
    void zeroCountAcceptsAReadOnlyDestination(boolean vector, DataType t) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(16, 64);
            MemorySegment readOnly = s.asReadOnly();
            Reductions.reduce(vector, t, ReduceOp.SUM, readOnly, 0, s, 0, s, 0, 0);
            Reductions.divide(vector, t, readOnly, 16, 0, 2);
            assertThrows(IndexOutOfBoundsException.class,
                    () -> Reductions.reduce(vector, t, ReduceOp.SUM, readOnly, 17, s, 0, s, 0, 0));
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void heapSegmentsWork(boolean vector) {
        float[] a = new float[1003], b = new float[1003];
        for (int i = 0; i < a.length; i++) { a[i] = i; b[i] = 2 * i; }
        Reductions.reduce(vector, DataType.FLOAT32, ReduceOp.SUM, MemorySegment.ofArray(a), 4, MemorySegment.ofArray(a),
                4,
                MemorySegment.ofArray(b), 0, 1002);
        for (int i = 1; i < a.length; i++) assertEquals(i + 2f * (i - 1), a[i], "element " + i);
        assertEquals(0f, a[0]);
    }

    @Test
    void vectorKernelsAreActiveInTheTestJvm() {
        assertTrue(Reductions.isVectorized(), "memory/pom.xml runs the tests with --add-modules jdk.incubator.vector");
    }
}
