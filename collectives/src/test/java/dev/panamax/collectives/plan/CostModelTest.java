package dev.panamax.collectives.plan;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.algorithms.Algorithm;
import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.algorithms.Costs;
import dev.panamax.collectives.schedule.Problem;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

class CostModelTest {

    /** The network formulas are checked with the compute term out of the way; {@link #computeTerm} checks it. */
    @BeforeAll
    static void noComputeTerm() {
        System.setProperty("panamax.model.reduceBytesPerSecond", "1e300");
    }

    @AfterAll
    static void defaultComputeTerm() {
        System.clearProperty("panamax.model.reduceBytesPerSecond");
    }

    /** R charges the bytes the busiest rank folds: the whole vector per butterfly round, 1/n of it per ring step. */
    @Test
    void computeTerm() {
        Problem p = new Problem(Collective.ALL_REDUCE, 0, 4, 1 << 20, 4, 0, Topology.flat(4));
        double wireRing = CostModel.predict("ring", p).seconds();
        double wireButterfly = CostModel.predict("butterfly", p).seconds();
        System.setProperty("panamax.model.reduceBytesPerSecond", "1e9");
        try {
            double bytes = 4.0 * (1 << 20);
            close(wireRing + 0.75 * bytes / 1e9, CostModel.predict("ring", p).seconds());
            close(wireButterfly + 2 * bytes / 1e9, CostModel.predict("butterfly", p).seconds());
        } finally {
            System.setProperty("panamax.model.reduceBytesPerSecond", "1e300");
        }
    }
    private static final double EPS = 1e-12;

    private static void close(double expected, double actual) {
        assertEquals(expected, actual, Math.abs(expected) * 1e-9 + EPS);
    }

    @Test
    void basicModelsMatchHandComputedValues() {
        // p = 4, n = 1 MB, alpha = 5 us, w = 1 GB/s
        close(3 * 5e-6 + 0.75e-3, Costs.ringPhaseTime(4, 1e6, 5e-6, 1e9)); // eq. 1: 765 us
        close(2 * 5e-6 + 0.75e-3, Costs.halvingDoublingPhaseTime(4, 1e6, 5e-6, 1e9)); // eq. 2: 760 us
        close(760e-6, Costs.bestPhaseTime(4, 1e6, 5e-6, 1e9)); // eq. 3, power of two
        close(2 * 5e-6 + 2.0 / 3 * 1e-3, Costs.bestPhaseTime(3, 1e6, 5e-6, 1e9)); // eq. 3, ring
        close(1525e-6, PaperFormulas.broadcast(4, 1e6, 5e-6, 1e9)); // eq. 4
        close(1525e-6, PaperFormulas.reduce(4, 1e6, 5e-6, 1e9));
        // eq. 5 = eq. 6: 12 ranks, 12 MB, alpha 1 us, min W = 100 MB/s
        close(2 * (11e-6 + 11.0 / 12 * 12e6 / 1e8),
                PaperFormulas.oneLevel(12, 12e6, 1e-6, new double[] {5e9, 1e8, 2e8}));
        close(0.220022, PaperFormulas.oneLevel(12, 12e6, 1e-6, 1e8));
        close(0, Costs.ringPhaseTime(1, 1e6, 5e-6, 1e9));
        close(0, Costs.halvingDoublingPhaseTime(1, 1e6, 5e-6, 1e9));
    }

    @Test
    void twoLevelEq7AndBlueConnectEq9OnThePapersExample() {
        // Fig. 1: 3 learners per node (NVLink 32 GB/s), w1 = 100 Gb/s, w2 = 200 Gb/s
        int[] p = {3, 2, 2};
        double[] w = {32e9, 12.5e9, 25e9};
        double n = 100e6;
        double a = 1e-6;
        double blc = PaperFormulas.blueConnect(p, n, a, w);
        double expected = 2 * Costs.ringPhaseTime(3, n, a, 32e9) + 2 * Costs.halvingDoublingPhaseTime(2, n / 3, a,
                12.5e9 / 3) + 2 * Costs.halvingDoublingPhaseTime(2, n / 6, a, 25e9 / 6);
        close(expected, blc);
        double two = PaperFormulas.twoLevel(3, 12, n, a, 32e9, a, 12.5e9);
        close(Costs.halvingDoublingPhaseTime(3, n, a, 32e9) * 2 + Costs.ringPhaseTime(3, n, a, 32e9) * 2 + 2
                * Costs.halvingDoublingPhaseTime(4, n, a, 12.5e9), two);
        assertTrue(blc <= two, blc + " > " + two);
        // torus, eq. 10: stage i sees min{w0, w_j / p0 : 1 <= j <= i}
        double torus = PaperFormulas.blueConnectTorus(p, n, a, w);
        close(2 * Costs.ringPhaseTime(3, n, a, 32e9) + 2 * Costs.halvingDoublingPhaseTime(2, n / 3, a, 12.5e9 / 3) + 2
                * Costs.halvingDoublingPhaseTime(2, n / 6, a, 12.5e9 / 3), torus);
    }

    @Test
    void asyncContentionModel() {
        double a = 1.4e-3;
        double b = 1.7e-9;
        double m = 4e6;
        close(a + b * m, PaperFormulas.allReduce(a, b, m)); // 004 eq. 3
        close(2 * (a + b * m), PaperFormulas.sequentialAllReduces(2, a, b, m)); // eq. 8
        close(a + 1.5 * b * m, PaperFormulas.simultaneousAllReduces(a, b, 1.5, m));
        close(2 * m / (a + 1.5 * b * m), PaperFormulas.throughput(2, a, b, 1.5, m)); // eq. 9
        close(m / (a + b * m), PaperFormulas.throughput(1, a, b, 1, m)); // eq. 7
        close(0.5 * b * m, PaperFormulas.contentionPenalty(b, 1.5, m)); // eq. 11
        assertTrue(PaperFormulas.throughput(2, a, b, 1.5, m) > PaperFormulas.throughput(1, a, b, 1, m)); // eq. 10
    }

    private static Problem problem(Collective c, long count, int eb, String topo) {
        Topology t = Topology.parse(topo);
        return new Problem(c, 0, t.size(), count, eb, 0, t);
    }

    @Test
    void flatTopologyPredictionsAreThePapersFormulas() {
        Problem p = problem(Collective.ALL_REDUCE, 1 << 20, 4, "6");
        double n = 4 << 20;
        double a = Topology.DEFAULT_LATENCY_SECONDS;
        double w = Topology.DEFAULT_BYTES_PER_SECOND;
        close(2 * Costs.ringPhaseTime(6, n, a, w), CostModel.predict("ring", p).seconds());
        // one-level ring, sec. 3.4
        close(CostModel.predict("ring", p).seconds(), CostModel.predict("blueconnect", p).seconds());
        close(CostModel.predict("ring", p).seconds(), CostModel.predict("mdring", p).seconds());
        close(PaperFormulas.oneLevel(p).seconds(), CostModel.predict("ring", p).seconds());
        // rhd on 6: fold to 4, 2 T_c(4), unfold
        close(2 * (a + n / w) + 2 * Costs.halvingDoublingPhaseTime(4, n, a, w), CostModel.predict("rhd", p).seconds());
        close(2 * (a + n / w) + 2 * (a + n / w), CostModel.predict("butterfly", p).seconds());
        close(5 * a + 5 * n / w, CostModel.predict("direct", p).seconds());
        close(2 * 3 * (a + n / w), CostModel.predict("reduce-bcast", p).seconds());
        Problem rs = problem(Collective.REDUCE_SCATTER, 1000, 4, "8");
        close(Costs.halvingDoublingPhaseTime(8, 8 * 4000, a, w), CostModel.predict("rhd", rs).seconds());
        close(Costs.ringPhaseTime(8, 8 * 4000, a, w), CostModel.predict("ring", rs).seconds());
        Problem ag = problem(Collective.ALL_GATHER, 1000, 4, "8");
        close(Costs.halvingDoublingPhaseTime(8, 8 * 4000, a, w), CostModel.predict("rhd", ag).seconds());
        close(3 * a, CostModel.predict("dissemination", problem(Collective.BARRIER, 0, 1, "5")).seconds());
        close(4 * (a + 4000 / w), CostModel.predict("pairwise", problem(Collective.ALL_TO_ALL, 1000, 4, "5"))
                .seconds());
        // chain broadcast of 4 pieces of 512 KiB over 5 ranks: 4 + 3 hops
        close(7 * (a + 512 * 1024 / w), CostModel.predict("ring", problem(Collective.BROADCAST, 1 << 19, 4, "5"))
                .seconds());
        close(0, CostModel.predict("ring", problem(Collective.ALL_REDUCE, 0, 4, "5")).seconds());
        close(0, CostModel.predict("ring", problem(Collective.ALL_REDUCE, 10, 4, "1")).seconds());
    }

    @Test
    void blueConnectPredictionIsEq9WithPerRankBandwidths() {
        Problem p = problem(Collective.ALL_REDUCE, 25 << 20, 4, "3x2x2:bw=5G,100M,10M:alpha=1us,20us,50us");
        double blc = CostModel.predict("blueconnect", p).seconds();
        close(PaperFormulas.blueConnect(p).seconds(), blc);
        double n = 100 << 20;
        double expected = 2 * Costs.ringPhaseTime(3, n, 1e-6, 5e9) + 2 * Costs.halvingDoublingPhaseTime(2, n / 3, 20e-6,
                100e6) + 2 * Costs.halvingDoublingPhaseTime(2, n / 6, 50e-6, 10e6);
        close(expected, blc);
        assertTrue(blc <= PaperFormulas.twoLevel(p).seconds());
        assertTrue(blc <= CostModel.predict("two-level", p).seconds());
        assertTrue(blc <= CostModel.predict("ring", p).seconds());
        assertTrue(CostModel.predict("blueconnect", p).formula().contains("eq. 9"));
    }

    @Test
    void twoLevelPredictionFollowsTheImplementation() {
        // 2 per node (5 GB/s), 4 leaders (rhd) over 100 MB/s; 1 MiB of floats: 2 broadcast pieces
        Problem p = problem(Collective.ALL_REDUCE, 1 << 18, 4, "2x4:bw=5G,100M:alpha=1us,20us");
        double n = 1 << 20;
        double node = Costs.ringPhaseTime(2, n, 1e-6, 5e9) + (1e-6 + 0.5 * n / 5e9) + (2 + 0) * (1e-6 + n / 2 / 5e9);
        double leaders = 2 * Costs.halvingDoublingPhaseTime(4, n, 20e-6, 100e6);
        close(node + leaders, CostModel.predict("two-level", p).seconds());
    }

    @Test
    void recursiveRoundsUseTheLevelTheyCross() {
        // rhd on 2x2: the first halving (partner r^2) crosses the slow level with half the vector
        Problem p = problem(Collective.ALL_REDUCE, 1 << 24, 4, "2x2:bw=5G,50M");
        double n = 64 << 20;
        double a = Topology.DEFAULT_LATENCY_SECONDS;
        close(2 * ((a + n / 2 / 50e6) + (a + n / 4 / 5e9)), CostModel.predict("rhd", p).seconds());
        close(2 * ((a + n / 2 / 5e9) + (a + n / 4 / 50e6)), CostModel.predict("blueconnect", p).seconds());
    }

    @Test
    void bytesPerRankMatchTheSchedules() {
        String[] topos = {"1", "2", "4", "6", "8", "12", "2x2", "3x2x2", "2x4", "4x2", "2x3", "2x2x2"};
        for (String topo : topos) {
            Topology t = Topology.parse(topo);
            int n = t.size();
            for (Collective c : Collective.values()) {
                // divisible by every group size and power of two used
                long count = c == Collective.BARRIER ? 0 : 48L * 1024 * 5;
                for (String name : Algorithms.names()) {
                    Algorithm alg = Algorithms.get(name);
                    Problem p = new Problem(c, 0, n, count, 4, 0, t);
                    if (!CostModel.hasModel(alg, p)) {
                        continue;
                    }
                    long max = 0;
                    for (int r = 0; r < n; r++) {
                        max = Math.max(max, alg.build(p.atRank(r)).elementsSent() * 4);
                    }
                    double predicted = CostModel.predict(name, p).bytesPerRank();
                    assertEquals(max, predicted, 1e-6 * max + 1e-9, name + " " + c.label() + " on " + topo);
                }
            }
        }
    }

    @Test
    void unsupportedAndUnknownAreRejected() {
        Problem rs6 = problem(Collective.REDUCE_SCATTER, 10, 4, "6");
        assertThrows(IllegalArgumentException.class, () -> CostModel.predict("rhd", rs6));
        assertThrows(IllegalArgumentException.class, () -> CostModel.predict("nosuch", rs6));
        assertThrows(IllegalArgumentException.class, () -> CostModel.predict("butterfly", rs6));
        for (String name : List.of("ring", "rhd", "butterfly", "reduce-bcast", "two-level", "mdring", "blueconnect",
                "direct", "pairwise",
                "dissemination")) {
            assertTrue(Algorithms.names().contains(name), name);
        }
    }
}
