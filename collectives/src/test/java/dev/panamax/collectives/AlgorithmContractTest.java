package dev.panamax.collectives;

import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.plan.Planner;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import java.util.function.BiPredicate;

/**
 * The contract grid for every algorithm, selected by name: ranks {1..8, 12, 16} over the in-JVM
 * transport, every collective the algorithm has, checked element by element, in place and out of
 * place; the hierarchical algorithms on a factorized topology (3x2x2 for 12 ranks, as in the
 * paper's Fig. 4). Then every algorithm on 3 and 4 ranks over shared memory and TCP, with counts
 * large enough for the by-reference and pipelined paths. The reducing collectives also run as pre-multiplied
 * sums, bit for bit against their sums of pre-scaled inputs.
 */
class AlgorithmContractTest {
    static final int[] RANKS = {1, 2, 3, 4, 5, 6, 7, 8, 12, 16};
    static final List<String> HIERARCHICAL = List.of("blueconnect", "mdring", "two-level");

    static Topology topologyFor(String algorithm, int n) {
        if (!HIERARCHICAL.contains(algorithm)) {
            return Topology.flat(n);
        }
        if (n == 12) {
            return Topology.parse("3x2x2");
        }
        for (int f = 2; f < n; f++) {
            if (n % f == 0) {
                return Topology.of(f, n / f);
            }
        }
        return Topology.flat(n); // a prime: no factorization, the algorithm degrades
    }

    static Stream<Arguments> localGrid() {
        List<Arguments> out = new ArrayList<>();
        if (Ranks.selected(Ranks.Transport.LOCAL)) {
            for (String a : Algorithms.names()) {
                for (int n : RANKS) {
                    out.add(Arguments.of(a, Ranks.Transport.LOCAL, n));
                }
            }
        }
        return out.stream();
    }

    static Stream<Arguments> transportGrid() {
        List<Arguments> out = new ArrayList<>();
        // With -Dpanamax.test.transports=LOCAL this grid runs in-JVM too rather than being empty.
        boolean processTransports = Ranks.selected(Ranks.Transport.SHM) || Ranks.selected(Ranks.Transport.TCP);
        for (Ranks.Transport t : Ranks.Transport.values()) {
            if (Ranks.selected(t) && (t != Ranks.Transport.LOCAL || !processTransports)) {
                for (String a : Algorithms.names()) {
                    for (int n : new int[] {3, 4}) {
                        out.add(Arguments.of(a, t, n));
                    }
                }
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0} {1} x {2} ranks")
    @MethodSource("localGrid")
    void everyAlgorithmMatchesTheReference(String algorithm, Ranks.Transport transport, int n) {
        check(algorithm, transport, n, new long[] {0, 1, 2, Math.max(0, n - 1), 13, 4099});
    }

    @ParameterizedTest(name = "{0} {1} x {2} ranks")
    @MethodSource("transportGrid")
    void everyAlgorithmOverEveryTransport(String algorithm, Ranks.Transport transport, int n) {
        check(algorithm, transport, n, new long[] {1, 13, 70_001});
    }

    private static void check(String algorithm, Ranks.Transport transport, int n, long[] counts) {
        check(algorithm, transport, n, counts, (type, op) ->
                op == ReduceOp.SUM || type == DataType.FLOAT32 || type == DataType.INT32);
    }

    /** {@code include}: which type and operator pairs to check (for all-gather, broadcast and all-to-all: which types,
     * with SUM). */
    static void check(String algorithm, Ranks.Transport transport, int n, long[] counts,
                      BiPredicate<DataType, ReduceOp> include) {
        Topology topology = topologyFor(algorithm, n);
        List<Collective> collectives = new ArrayList<>();
        for (Collective c : Collective.values()) {
            if (Algorithms.get(algorithm).unsupported(new Problem(c, 0, n, 1, 4, 0, topology)) == null) {
                collectives.add(c);
            }
        }
        if (collectives.isEmpty()) {
            return; // e.g. rhd reduce-scatter on 6 ranks: nothing this algorithm does here
        }
        List<Communicator> comms = transport.open(n);
        List<String> failures = Collections.synchronizedList(new ArrayList<>());
        try {
            RankThreads.run(comms, c -> {
                c.setTopology(topology);
                for (Collective col : collectives) {
                    c.setAlgorithm(col, algorithm);
                    assertTrue(Planner.scheduleFor(c, col, 7, DataType.FLOAT32, 0).algorithm().startsWith(algorithm));
                }
                try (Arena arena = Arena.ofConfined()) {
                    for (long count : counts) {
                        for (DataType type : DataType.values()) {
                            for (ReduceOp op : ReduceOp.values()) {
                                if (!include.test(type, op)) {
                                    continue;
                                }
                                if (collectives.contains(Collective.ALL_REDUCE)) {
                                    CollectiveContractTest.allReduce(c, arena, count, type, op, failures);
                                }
                                if (collectives.contains(Collective.REDUCE_SCATTER)) {
                                    CollectiveContractTest.reduceScatter(c, arena, count, type, op, failures);
                                }
                                if (collectives.contains(Collective.REDUCE)) {
                                    CollectiveContractTest.reduce(c, arena, count, type, op, failures);
                                }
                            }
                            if (!include.test(type, ReduceOp.SUM)) {
                                continue;
                            }
                            if (type.isFloatingPoint()) {
                                if (collectives.contains(Collective.ALL_REDUCE)) {
                                    PreMulSumTest.allReduce(c, arena, count, type, failures);
                                }
                                if (collectives.contains(Collective.REDUCE_SCATTER)) {
                                    PreMulSumTest.reduceScatter(c, arena, count, type, failures);
                                }
                                if (collectives.contains(Collective.REDUCE)) {
                                    PreMulSumTest.reduce(c, arena, count, type, failures);
                                }
                            }
                            if (collectives.contains(Collective.ALL_GATHER)) {
                                CollectiveContractTest.allGather(c, arena, count, type, failures);
                            }
                            if (collectives.contains(Collective.BROADCAST)) {
                                CollectiveContractTest.broadcast(c, arena, count, type, failures);
                            }
                            if (collectives.contains(Collective.ALL_TO_ALL)) {
                                PointToPointTest.allToAll(c, arena, count, type, failures);
                            }
                        }
                    }
                    if (collectives.contains(Collective.BARRIER)) {
                        c.barrier();
                    }
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
        assertEquals(List.of(), failures.size() > 10 ? failures.subList(0, 10) : failures);
    }

    @Test
    void anUnsupportedChoiceFailsBeforeAnyMessageMoves() {
        List<Communicator> comms = Panamax.local(6);
        try {
            Communicator c = comms.get(0);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> c.setAlgorithm(Collective.BROADCAST, "blueconnect"));
            assertTrue(e.getMessage().contains("has no broadcast"), e.getMessage());
            c.setAlgorithm(Collective.REDUCE_SCATTER, "rhd");
            try (Arena a = Arena.ofConfined()) {
                e = assertThrows(IllegalArgumentException.class,
                        () -> c.reduceScatter(a.allocate(24 * 4), a.allocate(4 * 4), 4, DataType.FLOAT32,
                                ReduceOp.SUM));
                assertTrue(e.getMessage().contains("power-of-two"), e.getMessage());
            }
            e = assertThrows(IllegalArgumentException.class, () -> c.setAlgorithm(Collective.ALL_REDUCE, "nope"));
            assertTrue(e.getMessage().contains("unknown algorithm 'nope'") && e.getMessage().contains("blueconnect"),
                    e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> c.setTopology(Topology.parse("2x2")));
            assertTrue(e.getMessage().contains("4 ranks, this communicator 6"), e.getMessage());
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @Test
    void blueConnectDegradesToTheRingWithoutHierarchy() {
        List<Communicator> comms = Panamax.local(5);
        try {
            Communicator c = comms.get(0);
            c.setAlgorithm(Collective.ALL_REDUCE, "blueconnect");
            String alg = Planner.scheduleFor(c, Collective.ALL_REDUCE, 100, DataType.FLOAT32, 0).algorithm();
            assertTrue(alg.contains("no hierarchy") && alg.contains("ring"), alg);
        } finally {
            RankThreads.closeAll(comms);
        }
    }
}
