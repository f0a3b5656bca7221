package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.Reductions;
import dev.panamax.testing.RankThreads;
import dev.panamax.testing.Reference;
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
 * large, in place and not; a float16 average does not overflow where the sum would. The
 * helpers {@link #allReduce}, {@link #reduceScatter} and {@link #reduce} check the three pre-multiplied
 * collectives bit for bit against scaling the input first and summing, and {@link AlgorithmContractTest} runs
 * them for every algorithm: the scaling rides on each schedule's own reads of the input.
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

    /** A scalar whose products round in every floating type (the grid's bitwise check needs rounding to matter). */
    static double roundingScalar(int rank) {
        return 1.0 / 3 + 0.1 * rank;
    }

    /** The input scaled as the pre-multiplied sum scales it, into a new segment (the reference's input). */
    private static MemorySegment scaled(Arena arena, MemorySegment input, long count, DataType type, double scalar) {
        MemorySegment out = arena.allocate(Math.max(1, count * type.byteSize()), 64);
        Reductions.scale(type, out, 0, input, 0, count, scalar);
        return out;
    }

    private static void addIfDifferent(List<String> failures, MemorySegment got, MemorySegment want, long count,
            DataType type, String what) {
        for (long i = 0; i < count; i++) {
            double g = type.getAsDouble(got, 0, i);
            double w = type.getAsDouble(want, 0, i);
            if (Double.compare(g, w) != 0) {
                failures.add(what + ": element " + i + " is " + g + ", scaling first and summing gives " + w);
                return;
            }
        }
    }

    /** allReducePreMulSum, out of place and in place (a buffer of the communicator's allocator), against the sum of
     * the scaled inputs. */
    static void allReduce(Communicator c, Arena arena, long count, DataType type, List<String> failures) {
        long bytes = Math.max(1, count * type.byteSize());
        double scalar = roundingScalar(c.rank());
        MemorySegment send = arena.allocate(bytes, 64);
        Reference.fill(send, 0, count, c.rank(), type, ReduceOp.SUM);
        MemorySegment want = arena.allocate(bytes, 64);
        c.allReduce(scaled(arena, send, count, type, scalar), want, count, type, ReduceOp.SUM);
        MemorySegment recv = arena.allocate(bytes, 64);
        c.allReducePreMulSum(send, recv, count, type, scalar);
        addIfDifferent(failures, recv, want, count, type, CollectiveContractTest.tag(c, "allreduce premulsum", count,
                type, null));
        MemorySegment buf = c.allocate(count * type.byteSize());
        Reference.fill(buf, 0, count, c.rank(), type, ReduceOp.SUM);
        c.allReducePreMulSum(buf, buf, count, type, scalar);
        addIfDifferent(failures, buf, want, count, type, CollectiveContractTest.tag(c, "allreduce premulsum in-place",
                count, type, null));
        c.free(buf);
    }

    /** reduceScatterPreMulSum, out of place and in place (the rank's own block of the input). */
    static void reduceScatter(Communicator c, Arena arena, long block, DataType type, List<String> failures) {
        int n = c.size();
        long e = type.byteSize();
        double scalar = roundingScalar(c.rank());
        MemorySegment send = arena.allocate(Math.max(1, n * block * e), 64);
        Reference.fill(send, 0, n * block, c.rank(), type, ReduceOp.SUM);
        MemorySegment want = arena.allocate(Math.max(1, block * e), 64);
        c.reduceScatter(scaled(arena, send, n * block, type, scalar), want, block, type, ReduceOp.SUM);
        MemorySegment recv = arena.allocate(Math.max(1, block * e), 64);
        c.reduceScatterPreMulSum(send, recv, block, type, scalar);
        addIfDifferent(failures, recv, want, block, type, CollectiveContractTest.tag(c, "reducescatter premulsum",
                block, type, null));
        MemorySegment own = send.asSlice(c.rank() * block * e, block * e);
        c.reduceScatterPreMulSum(send, own, block, type, scalar);
        addIfDifferent(failures, own, want, block, type, CollectiveContractTest.tag(c,
                "reducescatter premulsum in-place", block, type, null));
    }

    /** reducePreMulSum to a root that moves with the count, out of place and in place. */
    static void reduce(Communicator c, Arena arena, long count, DataType type, List<String> failures) {
        int n = c.size();
        int root = (int) (count % n);
        long bytes = Math.max(1, count * type.byteSize());
        double scalar = roundingScalar(c.rank());
        MemorySegment send = arena.allocate(bytes, 64);
        Reference.fill(send, 0, count, c.rank(), type, ReduceOp.SUM);
        MemorySegment want = arena.allocate(bytes, 64);
        c.reduce(scaled(arena, send, count, type, scalar), want, count, type, ReduceOp.SUM, root);
        MemorySegment recv = arena.allocate(bytes, 64);
        c.reducePreMulSum(send, recv, count, type, scalar, root);
        if (c.rank() == root) {
            addIfDifferent(failures, recv, want, count, type, CollectiveContractTest.tag(c,
                    "reduce premulsum to " + root, count, type, null));
        }
        c.reducePreMulSum(send, send, count, type, scalar, root);
        if (c.rank() == root) {
            addIfDifferent(failures, send, want, count, type, CollectiveContractTest.tag(c,
                    "reduce premulsum in-place to " + root, count, type, null));
        }
    }

    @Test
    void aFloat16AverageDoesNotOverflowWhereTheSumWould() {
        // 4 x 40000 is past float16's 65504: the sum is infinity; AVG and the pre-multiplied sum with 1/4 scale each
        // input before adding it, so they are not.
        int n = 4;
        List<Communicator> comms = Ranks.Transport.LOCAL.open(n);
        try {
            List<double[]> all = RankThreads.onEach(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment[] buffers = new MemorySegment[3];
                    for (int k = 0; k < 3; k++) {
                        buffers[k] = arena.allocate(2 * 16, 64);
                        for (int i = 0; i < 16; i++) {
                            DataType.FLOAT16.setFromDouble(buffers[k], 0, i, 40000);
                        }
                    }
                    c.allReduce(buffers[0], 16, DataType.FLOAT16, ReduceOp.SUM);
                    c.allReduce(buffers[1], 16, DataType.FLOAT16, ReduceOp.AVG);
                    c.allReducePreMulSum(buffers[2], buffers[2], 16, DataType.FLOAT16, 1.0 / c.size());
                    double[] got = new double[3];
                    for (int k = 0; k < 3; k++) {
                        got[k] = DataType.FLOAT16.getAsDouble(buffers[k], 0, 5);
                    }
                    return got;
                }
            });
            for (double[] r : all) {
                assertEquals(Double.POSITIVE_INFINITY, r[0], "the sum overflows");
                assertEquals(40000.0, r[1], "AVG does not");
                assertEquals(40000.0, r[2], "nor the pre-multiplied sum");
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
