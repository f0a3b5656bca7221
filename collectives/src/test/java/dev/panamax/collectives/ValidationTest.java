package dev.panamax.collectives;

import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.plan.Planner;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Cross-rank call validation and deterministic results. */
class ValidationTest {

    /**
     * Rank 2 passes another count, then another collective: every rank throws, listing each rank's
     * call; the next matching call works.
     */
    @ParameterizedTest
    @EnumSource(value = Ranks.Transport.class, names = {"LOCAL", "SHM", "TCP"})
    void mismatchedCallsFailOnEveryRankAndLeaveTheCommunicatorUsable(Ranks.Transport transport) {
        if (!Ranks.selected(transport)) {
            return;
        }
        List<Communicator> comms = transport.open(3);
        List<String> messages = Collections.synchronizedList(new ArrayList<>());
        try {
            RankThreads.run(comms, c -> {
                c.setCallValidation(true);
                try (Arena a = Arena.ofShared()) {
                    MemorySegment buf = a.allocate(8 * 16, 8);
                    try {
                        c.allReduce(buf, c.rank() == 2 ? 11 : 10, DataType.FLOAT64, ReduceOp.SUM);
                        messages.add("rank " + c.rank() + " did not notice the count mismatch");
                    } catch (MismatchedCallException e) {
                        messages.add(e.getMessage());
                    }
                    try {
                        if (c.rank() == 2) {
                            c.broadcast(buf, 10, DataType.FLOAT64, 0);
                        } else {
                            c.allReduce(buf, 10, DataType.FLOAT64, ReduceOp.MAX);
                        }
                        messages.add("rank " + c.rank() + " did not notice the collective mismatch");
                    } catch (MismatchedCallException e) {
                        messages.add(e.getMessage());
                    }
                    for (int i = 0; i < 10; i++) {
                        buf.setAtIndex(ValueLayout.JAVA_DOUBLE, i, c.rank() + 1);
                    }
                    c.allReduce(buf, 10, DataType.FLOAT64, ReduceOp.SUM);
                    if (buf.getAtIndex(ValueLayout.JAVA_DOUBLE, 9) != 6.0) {
                        messages.add("rank " + c.rank() + ": the matching call after the mismatches gave "
                                + buf.getAtIndex(ValueLayout.JAVA_DOUBLE, 9));
                    }
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
        assertEquals(6, messages.size(), messages::toString);
        for (String m : messages) {
            assertTrue(m.contains("calls disagree"), m);
            assertTrue(m.contains("rank 0: allreduce float64") && m.contains("rank 2: "), m);
        }
        assertTrue(messages.stream().anyMatch(m -> m.contains("rank 2: allreduce float64 sum count 11")),
                messages::toString);
        assertTrue(messages.stream().anyMatch(m -> m.contains("rank 2: broadcast float64 count 10 root 0")),
                messages::toString);
    }

    /**
     * Every algorithm reduces each element in an order fixed by its schedule: random floats,
     * arrival order shuffled by random delays, the results are bitwise identical run to run and
     * on every rank.
     */
    @Test
    void everyAlgorithmIsBitwiseReproducible() {
        int n = 6;
        long count = 10_007;
        for (String alg : Algorithms.namesFor(Collective.ALL_REDUCE)) {
            Topology t = List.of("blueconnect", "mdring", "two-level").contains(alg) ? Topology.of(2, 3)
                    : Topology.flat(n);
            List<long[]> results = Collections.synchronizedList(new ArrayList<>());
            for (int run = 0; run < 3; run++) {
                int seed = run;
                List<Communicator> comms = Panamax.local(n);
                try {
                    RankThreads.run(comms, c -> {
                        c.setTopology(t);
                        c.setAlgorithm(Collective.ALL_REDUCE, alg);
                        Random rnd = new Random(1000 + c.rank());
                        try (Arena a = Arena.ofShared()) {
                            MemorySegment buf = a.allocate(4 * count, 4);
                            for (long i = 0; i < count; i++) {
                                buf.setAtIndex(ValueLayout.JAVA_FLOAT, i,
                                        (float) (rnd.nextGaussian() * Math.pow(10, rnd.nextInt(8) - 4)));
                            }
                            Thread.sleep(new Random(seed * 31L + c.rank()).nextInt(20));
                            c.allReduce(buf, count, DataType.FLOAT32, ReduceOp.SUM);
                            long h = 1;
                            for (long i = 0; i < count; i++) {
                                h = h * 31 + Float.floatToRawIntBits(buf.getAtIndex(ValueLayout.JAVA_FLOAT, i));
                            }
                            results.add(new long[] {c.rank(), h});
                        }
                    });
                } finally {
                    RankThreads.closeAll(comms);
                }
            }
            long first = results.get(0)[1];
            for (long[] r : results) {
                assertEquals(first, r[1], alg + ": rank " + r[0] + " got other bits");
            }
        }
    }

    @Test
    void deterministicModeIgnoresTheTopologyWhenChoosing() {
        List<Communicator> comms = Panamax.local(4);
        try {
            Communicator c = comms.get(0);
            c.setDeterministic(true);
            String flat = Planner.scheduleFor(c, Collective.ALL_REDUCE, 1 << 20, DataType.FLOAT32, 0).algorithm();
            c.setTopology(Topology.parse("2x2:bw=10G,10M:alpha=1us,1ms"));
            assertEquals(flat, Planner.scheduleFor(c, Collective.ALL_REDUCE, 1 << 20, DataType.FLOAT32, 0).algorithm());
            c.setDeterministic(false);
            assertTrue(Planner.scheduleFor(c, Collective.ALL_REDUCE, 1 << 20, DataType.FLOAT32, 0).algorithm()
                    .startsWith("blueconnect"),
                    "the planner should use the slow outer level when not deterministic");
        } finally {
            RankThreads.closeAll(comms);
        }
    }
}
