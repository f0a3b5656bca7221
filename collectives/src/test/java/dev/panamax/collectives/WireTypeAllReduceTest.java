package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.Half;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link Communicator#allReduce(MemorySegment, MemorySegment, long, DataType, DataType, ReduceOp)}, float32 and
 * float64 data on the wire as bfloat16 or float16, element by element against a float64 reference of the inputs
 * as rounded to the wire type: within two roundings of the wire type for sums and averages, exact for min and
 * max; the same bits on every rank and in every run; on every transport, 1 to 8 ranks, counts from 0 to large.
 */
class WireTypeAllReduceTest {
    private static final long[] COUNTS = {0, 1, 3, 7, 4099, 65_536};
    private static final ReduceOp[] OPS = {ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MIN, ReduceOp.MAX};

    /** Element i of rank r: mixed sign and magnitude, mostly not representable in 16 bits. */
    static double input(int rank, long i) {
        SplittableRandom random = new SplittableRandom(7919L * rank + i);
        return (random.nextDouble() - 0.45) * Math.pow(2, random.nextInt(9) - 4);
    }

    /** {@code x} as the wire type keeps it (rounded through float32, as the conversions do). */
    static double rounded(double x, DataType wire) {
        return wire == DataType.BFLOAT16 ? Half.bfloat16ToFloat(Half.floatToBfloat16((float) x))
                : Half.float16ToFloat(Half.floatToFloat16((float) x));
    }

    /** Unit roundoff of {@code wire}. */
    static double unit(DataType wire) {
        return wire == DataType.BFLOAT16 ? 0x1p-8 : 0x1p-11;
    }

    /** Runs the all-reduce on each rank; every rank's result as doubles. */
    static List<double[]> run(List<Communicator> comms, long count, DataType type, DataType wire, ReduceOp op) {
        return RankThreads.onEach(comms, c -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment send = arena.allocate(Math.max(8, count * type.byteSize()), 64);
                MemorySegment recv = arena.allocate(Math.max(8, count * type.byteSize()), 64);
                for (long i = 0; i < count; i++) {
                    if (type == DataType.FLOAT64) {
                        send.setAtIndex(ValueLayout.JAVA_DOUBLE, i, input(c.rank(), i));
                    } else {
                        send.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) input(c.rank(), i));
                    }
                }
                boolean inPlace = count % 2 == 1;
                c.allReduce(send, inPlace ? send : recv, count, type, wire, op);
                MemorySegment out = inPlace ? send : recv;
                double[] got = new double[(int) count];
                for (int i = 0; i < count; i++) {
                    got[i] = type == DataType.FLOAT64 ? out.getAtIndex(ValueLayout.JAVA_DOUBLE, i)
                            : out.getAtIndex(ValueLayout.JAVA_FLOAT, i);
                }
                return got;
            }
        });
    }

    /** Checks {@code got} against the reference; returns null or what is wrong. */
    static String check(double[] got, int n, DataType type, DataType wire, ReduceOp op) {
        for (int i = 0; i < got.length; i++) {
            double exact = op == ReduceOp.MIN ? Double.MAX_VALUE : op == ReduceOp.MAX ? -Double.MAX_VALUE : 0;
            double magnitude = 0;
            for (int r = 0; r < n; r++) {
                double x = rounded(type == DataType.FLOAT32 ? (float) input(r, i) : input(r, i), wire);
                exact = switch (op) {
                    case MIN -> Math.min(exact, x);
                    case MAX -> Math.max(exact, x);
                    default -> exact + x;
                };
                magnitude += Math.abs(x);
            }
            double divisor = op == ReduceOp.AVG ? n : 1;
            double want = exact / divisor;
            double tolerance = op == ReduceOp.MIN || op == ReduceOp.MAX ? 0
                    // the result's rounding (relative, or absolute among float16's subnormals), and the sum's in
                    // the wide type
                    : unit(wire) * Math.abs(want) + (wire == DataType.FLOAT16 ? 0x1p-25 : 0)
                            + n * (type == DataType.FLOAT32 ? 0x1p-24 : 0x1p-53) * magnitude / divisor;
            if (Math.abs(got[i] - want) > tolerance) {
                return n + " ranks " + type + " as " + wire + " " + op + " element " + i + " of " + got.length
                        + ": " + got[i] + ", reference " + want + " (tolerance " + tolerance + ")";
            }
        }
        return null;
    }

    @ParameterizedTest
    @EnumSource(value = Ranks.Transport.class, names = {"LOCAL", "SHM", "TCP"})
    void everyRankGetsTheReductionWithinTwoRoundingsOfTheWireType(Ranks.Transport t) {
        grid(t, new int[] {1, 2, 3, 5, 8}, COUNTS);
    }

    /** Every type, wire type and op at each rank count and count on transport {@code t}. */
    static void grid(Ranks.Transport t, int[] rankCounts, long[] counts) {
        for (int n : rankCounts) {
            List<Communicator> comms = t.open(n);
            try {
                for (DataType type : new DataType[] {DataType.FLOAT32, DataType.FLOAT64}) {
                    for (DataType wire : new DataType[] {DataType.BFLOAT16, DataType.FLOAT16}) {
                        for (ReduceOp op : OPS) {
                            for (long count : counts) {
                                List<double[]> results = run(comms, count, type, wire, op);
                                for (double[] r : results) {
                                    assertArrayEquals(results.getFirst(), r, "every rank gets the same bits");
                                }
                                String wrong = check(results.getFirst(), n, type, wire, op);
                                assertTrue(wrong == null, t + ": " + wrong);
                            }
                        }
                    }
                }
            } finally {
                RankThreads.closeAll(comms);
            }
        }
    }

    @Test
    void itsErrorIsBelowARingAllReduceInTheWireType() {
        // 8 ranks: the ring rounds every partial sum to bfloat16, seven times; here the result once. Both round
        // the inputs alike, so the error is measured from the exact sum of the rounded inputs.
        int n = 8;
        long count = 4099;
        List<Communicator> comms = Ranks.Transport.LOCAL.open(n);
        try {
            double[] mixed = run(comms, count, DataType.FLOAT32, DataType.BFLOAT16, ReduceOp.SUM).getFirst();
            double[] ring = RankThreads.onEach(comms, c -> {
                c.setAlgorithm(Collective.ALL_REDUCE, "ring");
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment buf = arena.allocate(2 * count, 64);
                    for (long i = 0; i < count; i++) {
                        buf.setAtIndex(ValueLayout.JAVA_SHORT, i, Half.floatToBfloat16((float) input(c.rank(), i)));
                    }
                    c.allReduce(buf, count, DataType.BFLOAT16, ReduceOp.SUM);
                    double[] got = new double[(int) count];
                    for (int i = 0; i < count; i++) {
                        got[i] = Half.bfloat16ToFloat(buf.getAtIndex(ValueLayout.JAVA_SHORT, i));
                    }
                    return got;
                }
            }).getFirst();
            double mixedError = 0;
            double ringError = 0;
            for (int i = 0; i < count; i++) {
                double exact = 0;
                for (int r = 0; r < n; r++) {
                    exact += rounded(input(r, i), DataType.BFLOAT16);
                }
                mixedError += Math.abs(mixed[i] - exact);
                ringError += Math.abs(ring[i] - exact);
            }
            assertTrue(mixedError < ringError / 2, "mean error " + mixedError / count + " against the ring's "
                    + ringError / count);
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @Test
    void theSameBitsInEveryRunAndPlainWhenTheWireIsTheType() {
        List<Communicator> comms = Ranks.Transport.LOCAL.open(3);
        try {
            double[] first = run(comms, 4099, DataType.FLOAT32, DataType.BFLOAT16, ReduceOp.SUM).getFirst();
            double[] again = run(comms, 4099, DataType.FLOAT32, DataType.BFLOAT16, ReduceOp.SUM).getFirst();
            assertArrayEquals(first, again);
            double[] plain = run(comms, 4099, DataType.FLOAT64, DataType.FLOAT64, ReduceOp.SUM).getFirst();
            for (int i = 0; i < plain.length; i++) {
                double exact = input(0, i) + input(1, i) + input(2, i);
                assertTrue(Math.abs(plain[i] - exact) <= 1e-15 * 8, "float64 on the wire is not rounded: " + i);
            }
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @Test
    void wrongTypesAreRefusedNamingThem() {
        List<Communicator> comms = Ranks.Transport.LOCAL.open(1);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(64);
            Communicator c = comms.getFirst();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> c.allReduce(buf, buf, 4, DataType.INT32, DataType.BFLOAT16, ReduceOp.SUM));
            assertTrue(e.getMessage().contains("int32") && e.getMessage().contains("bfloat16"), e.getMessage());
            assertThrows(IllegalArgumentException.class,
                    () -> c.allReduce(buf, buf, 4, DataType.FLOAT32, DataType.INT8, ReduceOp.SUM));
            assertThrows(IllegalArgumentException.class,
                    () -> c.allReduce(buf, buf, 100, DataType.FLOAT32, DataType.BFLOAT16, ReduceOp.SUM));
            assertThrows(NullPointerException.class,
                    () -> c.allReduce(buf, buf, 4, DataType.FLOAT32, null, ReduceOp.SUM));
        } finally {
            RankThreads.closeAll(comms);
        }
    }
}
