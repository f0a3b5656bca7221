package dev.panamax.collectives;

import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.plan.Planner;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import dev.panamax.testing.Reference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import java.util.Arrays;

/**
 * {@link Communicator#allReduceConcurrently} against {@link Reference}: several buffers of mixed
 * counts (0, 1, primes, 2^20 + 3) all-reduced in one call, each buffer with its own inputs so that
 * a mix-up between buffers shows, over 1 to 5 ranks on every transport; and with every all-reduce
 * algorithm selected, including those whose schedules are not stage-aligned (the call then runs
 * the ring). On 5 ranks the mixed counts mix algorithms (recursive halving and doubling for the
 * small ones, the ring for the large), which interleaved naively would pair the wrong messages.
 */
class ConcurrentAllReduceTest {
    static final long LARGE = (1 << 20) + 3;
    /** Input index shift between buffers: buffer j holds the reference inputs from index j * SHIFT on. */
    static final long SHIFT = 5;

    static Stream<Arguments> grid() {
        List<Arguments> out = new ArrayList<>();
        for (Ranks.Transport t : Ranks.Transport.values()) {
            if (Ranks.selected(t)) {
                for (int n : new int[]{1, 2, 3, 4, 5}) {
                    out.add(Arguments.of(t, n));
                }
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0} x {1} ranks")
    @MethodSource("grid")
    void mixedCountsMatchTheReference(Ranks.Transport transport, int n) {
        List<Communicator> comms = transport.open(n);
        List<String> failures = Collections.synchronizedList(new ArrayList<>());
        try {
            RankThreads.run(comms, c -> {
                try (Arena arena = Arena.ofShared()) {
                    for (DataType type : new DataType[]{DataType.FLOAT32, DataType.FLOAT64, DataType.INT32}) {
                        for (ReduceOp op : new ReduceOp[]{ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX}) {
                            check(c, arena, new long[]{13, 0, 1, 7919, 2, 13}, type, op, failures);
                        }
                    }
                    check(c, arena, new long[]{LARGE, 1, LARGE - 2}, DataType.FLOAT32, ReduceOp.SUM, failures);
                    check(c, arena, new long[]{LARGE}, DataType.FLOAT32, ReduceOp.AVG, failures);
                    check(c, arena, new long[]{}, DataType.FLOAT32, ReduceOp.SUM, failures);
                    // The links are still in step: a plain collective after the concurrent ones.
                    check(c, arena, new long[]{3}, DataType.FLOAT64, ReduceOp.SUM, failures);
                    c.barrier();
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
        assertEquals(List.of(), failures.size() > 10 ? failures.subList(0, 10) : failures);
    }

    /** With each all-reduce algorithm selected on 3 and 4 ranks (rhd, butterfly, reduce-bcast are not stage-aligned on
     * 3). */
    @Test
    void everySelectedAlgorithmGivesTheReference() {
        for (int n : new int[]{3, 4}) {
            List<Communicator> comms = Ranks.Transport.LOCAL.open(n);
            List<String> failures = Collections.synchronizedList(new ArrayList<>());
            try {
                RankThreads.run(comms, c -> {
                    try (Arena arena = Arena.ofShared()) {
                        for (String name : Algorithms.namesFor(Collective.ALL_REDUCE)) {
                            if (Algorithms.get(name).unsupported(Planner.scheduleFor(c, Collective.ALL_REDUCE, 1,
                                    DataType.FLOAT32, 0)
                                    .problem()) != null) {
                                continue;
                            }
                            c.setAlgorithm(Collective.ALL_REDUCE, name);
                            check(c, arena, new long[]{1, 2, 13, 1000, 0, 3}, DataType.FLOAT32, ReduceOp.SUM, failures);
                        }
                        c.setAlgorithm(Collective.ALL_REDUCE, Algorithms.AUTO);
                    }
                });
            } finally {
                RankThreads.closeAll(comms);
            }
            assertEquals(List.of(), failures.size() > 10 ? failures.subList(0, 10) : failures, n + " ranks");
        }
    }

    @Test
    void rejectsOverlappingBuffersAndMismatchedCounts() {
        List<Communicator> comms = Ranks.Transport.LOCAL.open(1);
        try (Arena arena = Arena.ofShared()) {
            Communicator c = comms.getFirst();
            MemorySegment s = arena.allocate(64, 8);
            assertThrows(IllegalArgumentException.class,
                    () -> c.allReduceConcurrently(List.of(s, s.asSlice(16)), new long[]{8, 4}, DataType.FLOAT32,
                            ReduceOp.SUM));
            assertThrows(IllegalArgumentException.class,
                    () -> c.allReduceConcurrently(List.of(s), new long[]{1, 1}, DataType.FLOAT32, ReduceOp.SUM));
            assertThrows(IllegalArgumentException.class,
                    () -> c.allReduceConcurrently(List.of(s), new long[]{17}, DataType.FLOAT32, ReduceOp.SUM));
            // Adjacent, not overlapping: fine.
            c.allReduceConcurrently(List.of(s.asSlice(0, 16), s.asSlice(16)), new long[]{4, 12}, DataType.FLOAT32,
                    ReduceOp.SUM);
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    private static void check(Communicator c, Arena arena, long[] counts, DataType type, ReduceOp op,
            List<String> failures) {
        int n = c.size();
        List<MemorySegment> buffers = new ArrayList<>();
        for (int j = 0; j < counts.length; j++) {
            MemorySegment b = arena.allocate(Math.max(1, counts[j] * type.byteSize()), 64);
            for (long i = 0; i < counts[j]; i++) {
                type.setFromDouble(b, 0, i, Reference.input(c.rank(), i + j * SHIFT, type, op));
            }
            buffers.add(b);
        }
        c.allReduceConcurrently(buffers, counts, type, op);
        for (int j = 0; j < counts.length; j++) {
            MemorySegment b = buffers.get(j);
            for (long i = 0; i < counts[j]; i++) {
                double want = Reference.expected(i + j * SHIFT, n, type, op);
                double got = type.getAsDouble(b, 0, i);
                boolean ok = type.isFloatingPoint() ? Math.abs(got - want) <= Reference.tolerance(type)
                        * Math.max(1, Math.abs(want)) : got == want;
                if (!ok) {
                    failures.add("rank " + c.rank() + "/" + n + " " + type.canonicalName() + " " + op + " counts "
                            + Arrays.toString(counts) + ": buffer " + j + " element " + i + " is " + got + ", expected "
                            + want);
                    break;
                }
            }
        }
    }
}
