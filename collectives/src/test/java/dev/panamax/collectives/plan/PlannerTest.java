package dev.panamax.collectives.plan;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.algorithms.Algorithm;
import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.algorithms.Costs;
import dev.panamax.collectives.algorithms.Prediction;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import java.util.HashSet;

class PlannerTest {

    private static Problem problem(Collective c, long count, int eb, Topology t) {
        return new Problem(c, 0, t.size(), count, eb, 0, t);
    }

    private static String choice(Collective c, long bytes, String topo) {
        return Planner.choose(problem(c, bytes / 4, 4, Topology.parse(topo))).algorithm();
    }

    @Test
    void flatTopologySmallAndLargeMessages() {
        for (String topo : List.of("4", "6", "8", "16")) {
            assertTrue(Set.of("direct", "butterfly").contains(choice(Collective.ALL_REDUCE, 16, topo)), topo);
            assertTrue(Set.of("ring", "rhd").contains(choice(Collective.ALL_REDUCE, 64 << 20, topo)), topo);
        }
        assertEquals("rhd", choice(Collective.ALL_REDUCE, 64 << 20, "8"));
        assertEquals("ring", choice(Collective.ALL_REDUCE, 64 << 20, "6"));
        assertEquals("pairwise", choice(Collective.ALL_TO_ALL, 1024, "6"));
        assertEquals("dissemination", Planner.choose(problem(Collective.BARRIER, 0, 1, Topology.flat(5))).algorithm());
    }

    /**
     * Reduce-scatter and all-gather by the levels win across a slow outer level despite their block
     * permutation; on one flat level, where the permutation is not needed, the ring stays (first registered).
     */
    @Test
    void hierarchicalReduceScatterAndAllGatherWinOnATwoLevelNetwork() {
        for (Collective c : List.of(Collective.REDUCE_SCATTER, Collective.ALL_GATHER)) {
            Candidate h = Planner.choose(problem(c, 16 << 20, 4, Topology.parse("2x2:bw=5G,50M:alpha=5us,100us")));
            assertTrue(Set.of("blueconnect", "mdring").contains(h.algorithm()), c + ": " + h);
            assertEquals("ring", choice(c, 16 << 20, "6"), c.label());
            String shm = Planner.choose(problem(c, 16 << 20, 4, Topology.parse("2x2:bw=5G,5G"))).algorithm();
            assertTrue(Set.of("ring", "rhd").contains(shm), c + " with equal levels: " + shm);
        }
    }

    @Test
    void blueConnectWinsOnATwoLevelNetwork() {
        Candidate c = Planner.choose(problem(Collective.ALL_REDUCE, 16 << 20, 4, Topology.parse("2x2:bw=5G,50M")));
        assertEquals("blueconnect", c.algorithm());
        assertArrayEquals(new int[] {2, 2}, c.topology().fanouts());
        Candidate d = Planner.choose(problem(Collective.ALL_REDUCE, 25 << 20, 4,
                Topology.parse("3x2x2:bw=5G,100M,10M:alpha=1us,20us,50us")));
        assertTrue(Set.of("blueconnect", "mdring").contains(d.algorithm()), d.toString());
    }

    @Test
    void hierarchicalAlgorithmsAreWeighedOnEveryFactorization() {
        Topology t = Topology.parse("3x2x2:bw=5G,100M,10M:alpha=1us,20us,50us");
        List<Candidate> all = Planner.candidates(problem(Collective.ALL_REDUCE, 1 << 18, 4, t));
        for (String name : Algorithms.all().stream().filter(Algorithm::followsTopology).map(Algorithm::name).toList()) {
            List<String> shapes = all.stream().filter(c -> c.algorithm().equals(name)).map(c ->
                    Costs.fanouts(c.topology())).sorted().toList();
            assertEquals(List.of("12", "3x2x2", "3x4", "6x2"), shapes, name);
        }
        assertEquals(1, all.stream().filter(c -> c.algorithm().equals("ring")).count());
        // with per-rank bandwidths, splitting a level never costs BlueConnect time: the finest factorization is its
        // best
        Candidate bestBlue = all.stream().filter(c -> c.algorithm().equals("blueconnect")).findFirst().orElseThrow();
        assertEquals(t, bestBlue.topology());
    }

    @Test
    void factorizationsMergeAdjacentLevels() {
        Topology t = new Topology(List.of(new Topology.Level(3, 5e9, 1e-6), new Topology.Level(2, 1e8, 2e-5),
                new Topology.Level(2, 1e7, 5e-5)),
                new int[] {11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
        List<Topology> f = Planner.factorizations(t);
        assertEquals(4, f.size());
        assertEquals(t, f.get(0));
        List<String> shapes = new ArrayList<>();
        for (Topology x : f) {
            shapes.add(Costs.fanouts(x));
            for (int pos = 0; pos < 12; pos++) {
                assertEquals(t.rankAt(pos), x.rankAt(pos));
            }
        }
        assertEquals(List.of("3x2x2", "6x2", "3x4", "12"), shapes);
        assertEquals(new Topology.Level(6, 1e8, 2e-5), f.get(1).level(0));
        assertEquals(new Topology.Level(4, 1e7, 5e-5), f.get(2).level(1));
        assertEquals(new Topology.Level(12, 1e7, 5e-5), f.get(3).level(0));
        assertEquals(1, Planner.factorizations(Topology.flat(7)).size());
        // the merged group of a rank is the union of the groups it was made of
        assertEquals(Set.of(11, 10, 9, 8, 7, 6), toSet(f.get(1).group(11, 0)));
    }

    private static Set<Integer> toSet(int[] a) {
        Set<Integer> s = new HashSet<>();
        for (int x : a) {
            s.add(x);
        }
        return s;
    }

    @Test
    void neverChoosesAnUnsupportedAlgorithm() {
        for (int n = 1; n <= 16; n++) {
            List<Topology> tops = new ArrayList<>(List.of(Topology.flat(n)));
            for (int a = 2; a < n; a++) {
                if (n % a == 0) {
                    tops.add(Topology.parse(a + "x" + (n / a) + ":bw=5G,100M"));
                }
            }
            for (Topology t : tops) {
                for (Collective c : Collective.values()) {
                    for (long count : new long[] {0, 1, 1000, 1 << 22}) {
                        Problem p = new Problem(c, n - 1, n, c == Collective.BARRIER ? 0 : count, 4, n - 1, t);
                        Candidate x = Planner.choose(p);
                        Problem q = new Problem(c, n - 1, n, p.count(), 4, n - 1, x.topology());
                        assertNull(Algorithms.get(x.algorithm()).unsupported(q), x + " for " + c + " on " + t);
                        for (Candidate y : Planner.candidates(p)) {
                            assertNull(Algorithms.get(y.algorithm()).unsupported(
                                    new Problem(c, n - 1, n, p.count(), 4, n - 1, y.topology())));
                        }
                    }
                }
            }
        }
        assertEquals("ring", choice(Collective.REDUCE_SCATTER, 1 << 20, "6")); // rhd needs a power of two
        assertTrue(Planner.candidates(problem(Collective.REDUCE_SCATTER, 1000, 4, Topology.flat(6))).stream()
                .noneMatch(c -> c.algorithm().equals("rhd")));
    }

    @Test
    void deterministicAndSortedFastestFirst() {
        Topology t = Topology.parse("3x2x2:bw=5G,100M,10M:alpha=1us,20us,50us");
        Problem p = problem(Collective.ALL_REDUCE, 1 << 20, 4, t);
        List<Candidate> c = Planner.candidates(p);
        for (int i = 1; i < c.size(); i++) {
            assertTrue(c.get(i - 1).predictedSeconds() <= c.get(i).predictedSeconds() * (1 + 1e-8), c.toString());
        }
        for (int r = 0; r < t.size(); r++) {
            assertEquals(Planner.choose(p), Planner.choose(p.atRank(r)));
        }
        assertEquals(c.get(0), Planner.choose(p));
        String table = Planner.explain(p);
        assertTrue(table.contains("algorithm") && table.contains("factorization") && table.contains("blueconnect")
                && table.contains("6x2"),
                table);
        assertTrue(table.lines().anyMatch(l -> l.startsWith("* " + c.get(0).algorithm())), table);
    }

    /** The ring under another name, predicting {@code factor} times the ring's time. */
    private static final class ScaledRing implements Algorithm {
        final String name;
        final double factor;
        final Algorithm ring = Algorithms.get(Algorithms.RING);

        ScaledRing(String name, double factor) {
            this.name = name;
            this.factor = factor;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String unsupported(Problem problem) {
            return problem.collective() == Collective.ALL_REDUCE ? ring.unsupported(problem) : name
                    + " has only allreduce";
        }

        @Override
        public Schedule build(Problem problem) {
            Schedule s = ring.build(problem);
            return new Schedule(s.problem(), name, s.scratchCounts(), s.stages());
        }

        @Override
        public Prediction predict(Problem problem) {
            Prediction p = ring.predict(problem);
            return new Prediction(p.seconds() * factor, factor + " * (" + p.formula() + ")", p.bytesPerRank());
        }
    }

    @Test
    void anAlgorithmRegisteredAtRunTimeIsChosenByAutoWhenItPredictsTheLeast() {
        Problem p = problem(Collective.ALL_REDUCE, 1 << 20, 4, Topology.flat(4));
        String before = Planner.choose(p).algorithm();
        ScaledRing slow = new ScaledRing("test-slow-ring", 100);
        ScaledRing fast = new ScaledRing("test-fast-ring", 0.01);
        Algorithms.register(slow);
        try {
            assertEquals(before, Planner.choose(p).algorithm(), "a slower prediction must not win");
            assertTrue(Planner.candidates(p).stream().anyMatch(c -> c.algorithm().equals(slow.name)),
                    "weighed all the same");
            Algorithms.register(fast);
            assertEquals(fast.name, Planner.choose(p).algorithm());
            assertTrue(Planner.explain(p).lines().anyMatch(l -> l.startsWith("* " + fast.name)), Planner.explain(p));

            // A communicator on auto runs it, and the result is right.
            List<Communicator> comms = Panamax.local(3);
            try {
                assertEquals(fast.name, Planner.scheduleFor(comms.get(0), Collective.ALL_REDUCE, 1000, DataType.FLOAT32,
                        0).algorithm());
                List<Thread> threads = new ArrayList<>();
                float[][] got = new float[3][];
                for (Communicator c : comms) {
                    threads.add(Thread.ofPlatform().start(() -> {
                        try (Arena arena = Arena.ofConfined()) {
                            MemorySegment buf = arena.allocate(4L * 1000, 64);
                            for (int i = 0; i < 1000; i++) {
                                buf.setAtIndex(ValueLayout.JAVA_FLOAT, i, c.rank() + i);
                            }
                            c.allReduce(buf, 1000, DataType.FLOAT32, ReduceOp.SUM);
                            got[c.rank()] = buf.toArray(ValueLayout.JAVA_FLOAT);
                        }
                    }));
                }
                for (Thread t : threads) {
                    t.join(60_000);
                }
                for (float[] g : got) {
                    for (int i = 0; i < 1000; i++) {
                        assertEquals(3 * i + 3, g[i], "element " + i);
                    }
                }
            } finally {
                comms.forEach(Communicator::close);
            }
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        } finally {
            Algorithms.unregister(fast.name);
            Algorithms.unregister(slow.name);
        }
        assertEquals(before, Planner.choose(p).algorithm());
    }
}
