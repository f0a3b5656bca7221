package dev.panamax.ml;

import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static dev.panamax.ml.LayerType.MERGED;
import static dev.panamax.ml.LayerType.NORMAL;
import static dev.panamax.ml.LayerType.SIMULTANEOUS;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class WfbpSimulatorTest {
    static final AllReduceModel M = new AllReduceModel(2e-3, 1e-9, 1.5);

    /** With every gradient ready at once, WFBP's communication is eq. 4: a L + b sum(m), after the forward time. */
    @Test
    void wfbpWithoutComputeIsEquation4() {
        long[] bytes = {1000, 250_000, 7, 4_000_000, 0, 12_345};
        BackwardProfile p = new BackwardProfile(0.05, new double[bytes.length], bytes);
        double sum = Arrays.stream(bytes).sum();
        assertEquals(0.05 + M.a() * bytes.length + M.b() * sum,
                WfbpSimulator.simulate(p, M, SyncPolicy.WFBP).iterationSeconds(), 1e-12);
    }

    /** Communication that keeps up with back-propagation hides: the iteration is forward + backward + the last
     * all-reduce. */
    @Test
    void hiddenCommunicationLeavesOnlyTheLastAllReduce() {
        double[] t = {0.01, 0.01, 0.01, 0.01};
        long[] bytes = {1000, 1000, 1000, 5000};
        BackwardProfile p = new BackwardProfile(0.02, t, bytes);
        WfbpSimulator.Timeline tl = WfbpSimulator.simulate(p, M, new LayerType[]{NORMAL, NORMAL, NORMAL, NORMAL});
        assertEquals(0.02 + 0.04 + M.seconds(5000), tl.iterationSeconds(), 1e-12);
        assertEquals(M.seconds(5000), tl.exposedCommSeconds(), 1e-12);
        assertArrayEquals(new double[]{0.01, 0.02, 0.03, 0.04}, tl.commStartSeconds(), 1e-12);
    }

    /** A hand-computed timeline with a merged group and a simultaneous pair (a = 1, b = 1, gamma = 1.5). */
    @Test
    void mergedAndSimultaneousTimeline() {
        AllReduceModel unit = new AllReduceModel(1, 1, 1.5);
        // ready at 1, 2, 3, 7, 8
        BackwardProfile p = new BackwardProfile(0.5, new double[]{1, 1, 1, 4, 1}, new long[]{2, 1, 3, 1, 4});
        LayerType[] types = {NORMAL, MERGED, NORMAL, NORMAL, SIMULTANEOUS};
        WfbpSimulator.Timeline tl = WfbpSimulator.simulate(p, unit, types);
        // {0}: 1 .. 1 + 1 + 2 = 4. {1, 2}: ready 3, starts 4, 1 + 4 B -> 9.
        // {3} with {4} simultaneous: ready 8, link free 9: 9 .. 9 + 1 + (4 + 0.5 * 1) = 14.5.
        assertArrayEquals(new double[]{1, 4, 4, 9, 9}, tl.commStartSeconds(), 1e-12);
        assertArrayEquals(new double[]{4, 9, 9, 14.5, 14.5}, tl.commEndSeconds(), 1e-12);
        assertEquals(0.5 + 14.5, tl.iterationSeconds(), 1e-12);
        assertEquals(8, tl.backwardSeconds(), 1e-12);
    }

    /** The same typing with fusion copies (0.25 per byte): in as each member is ready, out after the all-reduce, on the
     * issuing thread. */
    @Test
    void fusionCopiesDelayTheGroupAndWhatFollows() {
        AllReduceModel unit = new AllReduceModel(1, 1, 1.5, 0.25);
        BackwardProfile p = new BackwardProfile(0.5, new double[]{1, 1, 1, 4, 1}, new long[]{2, 1, 3, 1, 4});
        LayerType[] types = {NORMAL, MERGED, NORMAL, NORMAL, SIMULTANEOUS};
        WfbpSimulator.Timeline tl = WfbpSimulator.simulate(p, unit, types);
        // {0}: 1 .. 4, no copy. {1, 2}: tensor 1 copied in 4 .. 4.25, tensor 2 4.25 .. 5; 5 .. 10; copied out 10 .. 11.
        // {3} with {4}: 11 .. 11 + 1 + 4.5 = 16.5.
        assertArrayEquals(new double[]{1, 5, 5, 11, 11}, tl.commStartSeconds(), 1e-12);
        assertArrayEquals(new double[]{4, 10, 10, 16.5, 16.5}, tl.commEndSeconds(), 1e-12);
        assertEquals(0.5 + 16.5, tl.iterationSeconds(), 1e-12);
    }

    /** Costly copies make fusion lose: many large tensors, all ready at once, stay unfused under MG-WFBP and ASC-WFBP.
     * */
    @Test
    void costlyCopiesStopFusion() {
        long[] bytes = new long[8];
        Arrays.fill(bytes, 1 << 20);
        BackwardProfile p = new BackwardProfile(0, new double[8], bytes);
        AllReduceModel free = new AllReduceModel(1e-3, 1e-9, 1.5);
        AllReduceModel costly = new AllReduceModel(1e-3, 1e-9, 1.5, 1e-9);
        assertTrue(Arrays.asList(LayerTypes.decide(p, free, SyncPolicy.MG_WFBP)).contains(MERGED));
        for (SyncPolicy policy : new SyncPolicy[]{SyncPolicy.MG_WFBP, SyncPolicy.ASC_WFBP}) {
            assertFalse(Arrays.asList(LayerTypes.decide(p, costly, policy)).contains(MERGED), policy.toString());
        }
    }

    /** Eq. 9: two simultaneous all-reduces of m bytes take a + gamma b m; eq. 11: each pays (gamma - 1) b m. */
    @Test
    void simultaneousModelIsThePapers() {
        double m = 1 << 20;
        assertEquals(M.a() + M.gamma() * M.b() * m, M.simultaneousSeconds(new double[]{m, m}), 1e-15);
        assertEquals(M.seconds(m), M.simultaneousSeconds(new double[]{m}), 1e-15);
        assertEquals((M.gamma() - 1) * M.b() * m, M.simultaneousSeconds(new double[]{m, m}) - M.seconds(m), 1e-15);
    }

    @Test
    void rejectsBadTypings() {
        BackwardProfile p = new BackwardProfile(0, new double[]{0, 0}, new long[]{1, 1});
        assertThrows(IllegalArgumentException.class, () ->
                WfbpSimulator.simulate(p, M, new LayerType[]{NORMAL, MERGED}));
        assertThrows(IllegalArgumentException.class, () -> WfbpSimulator.simulate(p, M, new LayerType[]{NORMAL}));
        assertThrows(IllegalArgumentException.class, () -> new BackwardProfile(0, new double[]{-1}, new long[]{1}));
    }
}
