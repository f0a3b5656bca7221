package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link Communicator#allReducePreMulSum}: each rank's input times its own scalar, summed, element by element
 * against a float64 reference (the inputs and scalars are chosen so that every product and partial sum is exact
 * in every floating type, so any difference is a wrong element); every transport, 1 to 8 ranks, counts from 0 to
 * large, in place and not; a float16 average that overflows as a sum does not as a pre-multiplied sum.
 */
class PreMulSumTest {
    private static final long[] COUNTS = {0, 1, 3, 7, 4099, 65_536};
    private static final DataType[] TYPES = {DataType.FLOAT32, DataType.FLOAT64, DataType.BFLOAT16,
        DataType.FLOAT16};

    /** Element i of rank r: 1 to 5. */
    static double input(int rank, long i) {
        return 1 + Math.floorMod(i * 7 + rank * 3L, 5);
    }

    /** Rank r's scalar: a multiple of 1/4. */
    static double scalar(int rank) {
        return 0.5 + 0.25 * rank;
    }

    static List<double[]> run(List<Communicator> comms, long count, DataType type, boolean inPlace) {
        return RankThreads.onEach(comms, c -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment send = arena.allocate(Math.max(8, count * type.byteSize()), 64);
                MemorySegment recv = inPlace ? send : arena.allocate(Math.max(8, count * type.byteSize()), 64);
                for (long i = 0; i < count; i++) {
                    type.setFromDouble(send, 0, i, input(c.rank(), i));
                }
                c.allReducePreMulSum(send, recv, count, type, scalar(c.rank()));
                double[] got = new double[(int) count];
                for (int i = 0; i < count; i++) {
                    got[i] = type.getAsDouble(recv, 0, i);
                }
                return got;
            }
        });
    }

    @ParameterizedTest
    @EnumSource(value = Ranks.Transport.class, names = {"LOCAL", "SHM", "TCP"})
    void everyRanksInputIsScaledByItsOwnScalarOnce(Ranks.Transport t) {
        grid(t, new int[] {1, 2, 3, 5, 8}, COUNTS);
    }

    /** Every type at each rank count and count on transport {@code t}. */
    static void grid(Ranks.Transport t, int[] rankCounts, long[] counts) {
        for (int n : rankCounts) {
            List<Communicator> comms = t.open(n);
            try {
                for (DataType type : TYPES) {
                    for (long count : counts) {
                        List<double[]> results = run(comms, count, type, count % 2 == 1);
                        for (int r = 0; r < n; r++) {
                            double[] got = results.get(r);
                            for (int i = 0; i < count; i++) {
                                double want = 0;
                                for (int q = 0; q < n; q++) {
                                    want += scalar(q) * input(q, i);
                                }
                                if (got[i] != want) {
                                    throw new AssertionError(t + " " + n + " ranks " + type + " count " + count
                                            + " rank " + r + " element " + i + ": " + got[i] + ", want " + want);
                                }
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
    void aFloat16AverageThatOverflowsAsASumDoesNotPreMultiplied() {
        // 4 x 40000 is past float16's 65504: AVG sums first and ends at infinity; 1/4 of each input first does not.
        int n = 4;
        List<Communicator> comms = Ranks.Transport.LOCAL.open(n);
        try {
            List<double[]> both = RankThreads.onEach(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment a = arena.allocate(2 * 16, 64);
                    MemorySegment b = arena.allocate(2 * 16, 64);
                    for (int i = 0; i < 16; i++) {
                        DataType.FLOAT16.setFromDouble(a, 0, i, 40000);
                        DataType.FLOAT16.setFromDouble(b, 0, i, 40000);
                    }
                    c.allReduce(a, 16, DataType.FLOAT16, ReduceOp.AVG);
                    c.allReducePreMulSum(b, b, 16, DataType.FLOAT16, 1.0 / c.size());
                    return new double[] {DataType.FLOAT16.getAsDouble(a, 0, 5), DataType.FLOAT16.getAsDouble(b, 0, 5)};
                }
            });
            for (double[] r : both) {
                assertEquals(Double.POSITIVE_INFINITY, r[0], "AVG overflows");
                assertEquals(40000.0, r[1], "the pre-multiplied sum does not");
            }
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @Test
    void deterministicModeGivesTheSameBitsEveryRunAndIntegersAreRefused() {
        List<Communicator> comms = Ranks.Transport.LOCAL.open(3);
        try {
            RankThreads.run(comms, c -> c.setDeterministic(true));
            double[] first = run(comms, 4099, DataType.FLOAT32, false).getFirst();
            assertArrayEquals(first, run(comms, 4099, DataType.FLOAT32, true).getFirst());
            Communicator c = comms.getFirst();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment buf = arena.allocate(64);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> c.allReducePreMulSum(buf, buf, 4, DataType.INT32, 2));
                assertTrue(e.getMessage().contains("int32"), e.getMessage());
                assertThrows(IllegalArgumentException.class,
                        () -> c.allReducePreMulSum(buf, buf, 100, DataType.FLOAT32, 2));
            }
        } finally {
            RankThreads.closeAll(comms);
        }
    }
}
