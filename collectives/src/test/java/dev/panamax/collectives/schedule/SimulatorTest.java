package dev.panamax.collectives.schedule;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.algorithms.Algorithm;
import dev.panamax.collectives.algorithms.Algorithms;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Proves every algorithm's schedules for 1..64 ranks with the symbolic simulator. */
class SimulatorTest {

    /** Counts that hit the edge cases: empty, one element, fewer than the ranks, primes, uneven. */
    static long[] counts(int n) {
        Set<Long> s = new LinkedHashSet<>(List.of(0L, 1L, 2L, 13L, (long) n - 1, (long) n, 3L * n + 1));
        s.removeIf(c -> c < 0);
        return s.stream().mapToLong(Long::longValue).toArray();
    }

    /** Topologies for n ranks: flat, and box factorizations (innermost first) when n has them. */
    static List<Topology> topologies(int n) {
        List<Topology> out = new ArrayList<>();
        out.add(Topology.flat(n));
        int a = smallestFactor(n);
        if (a < n) {
            out.add(Topology.of(a, n / a));
            out.add(Topology.of(n / a, a));
            int b = smallestFactor(n / a);
            if (b < n / a) {
                out.add(Topology.of(a, b, n / a / b));
            }
        }
        return out;
    }

    private static int smallestFactor(int n) {
        for (int f = 2; f * f <= n; f++) {
            if (n % f == 0) {
                return f;
            }
        }
        return n;
    }

    @TestFactory
    Stream<DynamicTest> everyAlgorithmEveryRankCount() {
        List<DynamicTest> tests = new ArrayList<>();
        for (Collective c : Collective.values()) {
            for (String name : Algorithms.namesFor(c)) {
                Algorithm alg = Algorithms.get(name);
                tests.add(DynamicTest.dynamicTest(c.label() + " " + name, () -> {
                    int checked = 0;
                    for (int n = 1; n <= 64; n++) {
                        int[] roots = c == Collective.BROADCAST || c == Collective.REDUCE ? new int[] {0, n - 1, n / 2}
                                : new int[] {0};
                        boolean hierarchical = name.equals("blueconnect") || name.equals("mdring")
                                || name.equals("two-level");
                        List<Topology> tops = hierarchical ? topologies(n) : List.of(Topology.flat(n));
                        for (Topology t : tops) {
                            for (long count : c == Collective.BARRIER ? new long[] {0} : counts(n)) {
                                for (int root : roots) {
                                    Problem p = new Problem(c, 0, n, count, 4, root, t);
                                    if (alg.unsupported(p) == null) {
                                        Simulator.verify(alg::build, p);
                                        checked++;
                                    }
                                }
                            }
                        }
                    }
                    assertTrue(checked > 0, "nothing checked for " + name);
                }));
            }
        }
        return tests.stream();
    }

    /**
     * allReduceConcurrently interleaves stage-aligned schedules and falls back to the ring's: the
     * ring all-reduce is stage-aligned for 1..64 ranks on every topology; recursive halving and
     * doubling on 3 ranks (folding the third rank in and out) is not, which the check sees.
     */
    @Test
    void ringAllReduceIsStageAligned() {
        Algorithm ring = Algorithms.get("ring");
        for (int n = 1; n <= 64; n++) {
            for (Topology t : topologies(n)) {
                for (long count : counts(n)) {
                    Problem p = new Problem(Collective.ALL_REDUCE, 0, n, count, 4, 0, t);
                    assertTrue(Simulator.stageAligned(everyRank(ring, p)), "ring " + p);
                }
            }
        }
        Problem three = new Problem(Collective.ALL_REDUCE, 0, 3, 13, 4, 0, Topology.flat(3));
        assertFalse(Simulator.stageAligned(everyRank(Algorithms.get("rhd"), three)));
    }

    private static List<Schedule> everyRank(Algorithm a, Problem p) {
        List<Schedule> all = new ArrayList<>();
        for (int r = 0; r < p.size(); r++) {
            all.add(a.build(p.atRank(r)));
        }
        return all;
    }

    @Test
    void blueConnectOnThePapersFigure4() {
        Topology t = Topology.parse("3x2x2");
        for (long count : new long[] {12, 100, 7, 1 << 12}) {
            Simulator.verify(Algorithms.get(Algorithms.BLUECONNECT)::build,
                    new Problem(Collective.ALL_REDUCE, 0, 12, count, 4, 0, t));
        }
    }

    /**
     * Reduce-scatter and all-gather by the levels keep NCCL's blocks (rank r ends with block r, block q
     * comes from rank q): on 3x2x2 the levels' order is not NCCL's, so the schedules permute the blocks
     * locally; on a flat topology the orders agree and they do not.
     */
    @Test
    void hierarchicalReduceScatterAndAllGatherKeepNcclBlocks() {
        for (String name : List.of(Algorithms.BLUECONNECT, Algorithms.MULTI_DIM_RING)) {
            Algorithm a = Algorithms.get(name);
            for (Collective c : List.of(Collective.REDUCE_SCATTER, Collective.ALL_GATHER)) {
                for (long count : new long[] {1, 5, 64}) {
                    Problem hierarchy = new Problem(c, 0, 12, count, 4, 0, Topology.parse("3x2x2"));
                    Simulator.verify(a::build, hierarchy);
                    assertTrue(a.build(hierarchy.atRank(1)).stages().stream()
                            .anyMatch(st -> st.label().contains("permute blocks")), name + " " + c.label());
                    Problem flat = new Problem(c, 0, 4, count, 4, 0, Topology.flat(4));
                    Simulator.verify(a::build, flat);
                    assertTrue(a.build(flat.atRank(1)).stages().stream()
                            .noneMatch(st -> st.label().contains("permute blocks")), name + " " + c.label());
                }
            }
        }
    }

    /** A schedule that forgets a stage, counts twice or deadlocks is caught. */
    @Test
    void brokenSchedulesAreRejected() {
        Algorithm dropsLastStage = new Algorithm() {
            public String name() {
                return "broken";
            }

            public String unsupported(Problem p) {
                return null;
            }

            public Schedule build(Problem p) {
                Schedule s = Algorithms.get("ring").build(p);
                return new Schedule(p, "broken", s.scratchCounts(), s.stages().subList(0, s.stages().size() - 1));
            }
        };
        assertThrows(Simulator.ScheduleException.class,
                () -> Simulator.verify(dropsLastStage::build,
                        new Problem(Collective.ALL_REDUCE, 0, 4, 8, 4, 0, Topology.flat(4))));

        Algorithm countsTwice = new Algorithm() {
            public String name() {
                return "twice";
            }

            public String unsupported(Problem p) {
                return null;
            }

            public Schedule build(Problem p) {
                ScheduleBuilder b = new ScheduleBuilder(p, "twice");
                int peer = 1 - p.rank();
                b.stage("swap").send(peer, Slice.send(0, 4)).recvReduce(peer, Slice.recv(0, 4), Slice.send(0, 4));
                b.stage("again").send(peer, Slice.send(0, 4)).recvReduce(peer, Slice.recv(0, 4), Slice.recv(0, 4));
                b.stage("finish").finish(Slice.recv(0, 4), 2);
                return b.build();
            }
        };
        Simulator.ScheduleException e = assertThrows(Simulator.ScheduleException.class,
                () -> Simulator.verify(countsTwice::build,
                        new Problem(Collective.ALL_REDUCE, 0, 2, 4, 4, 0, Topology.flat(2))));
        assertTrue(e.getMessage().contains("twice"), e.getMessage());

        Algorithm deadlocks = new Algorithm() {
            public String name() {
                return "deadlock";
            }

            public String unsupported(Problem p) {
                return null;
            }

            public Schedule build(Problem p) {
                ScheduleBuilder b = new ScheduleBuilder(p, "deadlock");
                int peer = 1 - p.rank();
                // both receive first, then send: neither stage can complete
                b.stage("recv").recv(peer, Slice.recv(0, 1));
                b.stage("send").send(peer, Slice.send(0, 1));
                return b.build();
            }
        };
        e = assertThrows(Simulator.ScheduleException.class,
                () -> Simulator.verify(deadlocks::build,
                        new Problem(Collective.BROADCAST, 0, 2, 1, 4, 0, Topology.flat(2))));
        assertTrue(e.getMessage().contains("deadlock"), e.getMessage());
    }
}
