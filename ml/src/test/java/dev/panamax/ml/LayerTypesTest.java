package dev.panamax.ml;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Supplier;

import static dev.panamax.ml.LayerType.MERGED;
import static dev.panamax.ml.LayerType.NORMAL;
import static dev.panamax.ml.LayerType.SIMULTANEOUS;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LayerTypesTest {
    /** a = 1 s, b = 1 s/B, gamma = 1.5: times are easy to add up by hand. */
    static final AllReduceModel UNIT = new AllReduceModel(1, 1, 1.5);

    static BackwardProfile profile(double[] backward, long... bytes) {
        return new BackwardProfile(0, backward, bytes);
    }

    /**
     * Two 1-byte tensors ready at once. WFBP: 2 + 2 = 4 s. Merged: one all-reduce of 2 B, 3 s.
     * Simultaneous: 1 + 1 * (1 + 0.5 * 1) = 2.5 s, which ASC finds by keeping tensor 0 normal
     * (its look-ahead sees tensor 1 simultaneous) rather than merging it.
     */
    @Test
    void twoTensorsReadyTogether() {
        BackwardProfile p = profile(new double[]{0, 0}, 1, 1);
        assertArrayEquals(new LayerType[]{NORMAL, NORMAL}, LayerTypes.decide(p, UNIT, SyncPolicy.WFBP));
        assertArrayEquals(new LayerType[]{MERGED, NORMAL}, LayerTypes.decide(p, UNIT, SyncPolicy.MG_WFBP));
        assertArrayEquals(new LayerType[]{NORMAL, SIMULTANEOUS}, LayerTypes.decide(p, UNIT, SyncPolicy.ASC_WFBP));
        assertEquals(4, WfbpSimulator.simulate(p, UNIT, SyncPolicy.WFBP).iterationSeconds(), 1e-12);
        assertEquals(3, WfbpSimulator.simulate(p, UNIT, SyncPolicy.MG_WFBP).iterationSeconds(), 1e-12);
        assertEquals(2.5, WfbpSimulator.simulate(p, UNIT, SyncPolicy.ASC_WFBP).iterationSeconds(), 1e-12);
    }

    /**
     * Three 1-byte tensors ready at once. MG: all three merged, 1 + 3 = 4 s. ASC, by hand: step 0
     * merging (best continuation 4 s: {0,1,2}) beats normal (best 4.5 s: {0} with {1} simultaneous,
     * then {2}); step 1 normal (then {2} simultaneous with {0,1}: 1 + (2 + 0.5 * 1) = 3.5 s) beats
     * merging (4 s); step 2 simultaneous (3.5 s) beats normal ({0,1} then {2}: 3 + 2 = 5 s).
     */
    @Test
    void threeTensorsReadyTogether() {
        BackwardProfile p = profile(new double[]{0, 0, 0}, 1, 1, 1);
        assertArrayEquals(new LayerType[]{MERGED, MERGED, NORMAL}, LayerTypes.decide(p, UNIT, SyncPolicy.MG_WFBP));
        assertArrayEquals(new LayerType[]{MERGED, NORMAL, SIMULTANEOUS},
                LayerTypes.decide(p, UNIT, SyncPolicy.ASC_WFBP));
        assertEquals(4, WfbpSimulator.simulate(p, UNIT, SyncPolicy.MG_WFBP).iterationSeconds(), 1e-12);
        assertEquals(3.5, WfbpSimulator.simulate(p, UNIT, SyncPolicy.ASC_WFBP).iterationSeconds(), 1e-12);
    }

    /**
     * The paper's Q1: tensor 0's all-reduce (0 to 2 s) ends before tensor 1 is ready (10 s), so
     * it stays normal; merging would wait for tensor 1 (10 to 13 s), and so would running them
     * together (10 to 12.5 s), against 12 s with both normal.
     */
    @Test
    void hiddenAllReduceStaysNormal() {
        BackwardProfile p = profile(new double[]{0, 10}, 1, 1);
        for (SyncPolicy policy : SyncPolicy.values()) {
            assertArrayEquals(new LayerType[]{NORMAL, NORMAL}, LayerTypes.decide(p, UNIT, policy), policy.name());
            assertEquals(12, WfbpSimulator.simulate(p, UNIT, policy).iterationSeconds(), 1e-12);
        }
    }

    /**
     * Six 1-byte tensors ready at once: unbounded, MG merges them all (as threeTensorsReadyTogether);
     * with maxFusedBytes = 2 no fused group exceeds 2 bytes, in either fusing policy.
     */
    @Test
    void fusedGroupsStayWithinMaxFusedBytes() {
        BackwardProfile p = profile(new double[]{0, 0, 0, 0, 0, 0}, 1, 1, 1, 1, 1, 1);
        assertArrayEquals(new LayerType[]{MERGED, MERGED, MERGED, MERGED, MERGED, NORMAL},
                LayerTypes.decide(p, UNIT, SyncPolicy.MG_WFBP));
        AllReduceModel capped = new AllReduceModel(UNIT.a(), UNIT.b(), UNIT.gamma(), UNIT.copy(), UNIT.a(), 2);
        for (SyncPolicy policy : List.of(SyncPolicy.MG_WFBP, SyncPolicy.ASC_WFBP)) {
            LayerType[] t = LayerTypes.decide(p, capped, policy);
            long group = 0;
            int merged = 0;
            for (LayerType x : t) {
                group += 1;
                if (x == MERGED) {
                    merged++;
                } else {
                    assertTrue(group <= 2, policy + " " + Arrays.toString(t));
                    group = 0;
                }
            }
            assertTrue(merged > 0, policy + " still fuses within the bound: " + Arrays.toString(t));
        }
        assertThrows(IllegalArgumentException.class, () -> new AllReduceModel(1, 1, 1, 0, 1, 0));
    }

    /** No startup cost: nothing is gained by merging; with gamma = 2 nothing by running together either. */
    @Test
    void noStartupAndFullContentionLeaveEverythingNormal() {
        BackwardProfile p = profile(new double[]{0, 0.5, 0, 0.25, 0}, 3, 1, 4, 1, 5);
        AllReduceModel m = new AllReduceModel(0, 1, 2);
        for (SyncPolicy policy : SyncPolicy.values()) {
            for (LayerType t : LayerTypes.decide(p, m, policy)) {
                assertEquals(NORMAL, t, policy.name());
            }
        }
    }

    static final List<AllReduceModel> MODELS = List.of(
            AllReduceModel.PAPER_10GBE,
            // of the order of shared memory between processes on one host
            new AllReduceModel(30e-6, 0.5e-9, 1.8),
            // a slow network with a large startup, and links that multiplex well
            new AllReduceModel(5e-3, 4e-9, 1.2));

    /**
     * Profiles shaped like networks, built here: {@code layers} layers in backward order, each a weight
     * tensor of 4 KiB to 16 MiB (log-uniform) ready after a random share of {@code backwardSeconds}, and
     * its bias of 4 bytes per output ready at the same moment; seeded, so the same every run.
     */
    static BackwardProfile layered(long seed, int layers, double backwardSeconds) {
        SplittableRandom random = new SplittableRandom(seed);
        double[] work = new double[layers];
        double total = 0;
        for (int l = 0; l < layers; l++) {
            work[l] = 0.1 + random.nextDouble();
            total += work[l];
        }
        double[] times = new double[2 * layers];
        long[] bytes = new long[2 * layers];
        for (int l = 0; l < layers; l++) {
            long weight = 4L << random.nextInt(10, 23);
            times[2 * l] = backwardSeconds * work[l] / total;
            bytes[2 * l] = weight;
            times[2 * l + 1] = 0;
            bytes[2 * l + 1] = Math.max(4, (long) Math.sqrt(weight / 4.0) * 4);
        }
        return new BackwardProfile(backwardSeconds / 2, times, bytes);
    }

    /** Network-like profiles of 2 to 150 layers, and uniform ones that are communication or start-up bound. */
    static final Map<String, Supplier<BackwardProfile>> PROFILES = Map.of(
            "layered-2", () -> layered(1, 2, 0.01),
            "layered-20", () -> layered(2, 20, 0.05),
            "layered-150", () -> layered(3, 150, 0.2),
            "comm-bound", () -> uniform(32, 16L << 20, 0.02),
            "many-small", () -> uniform(512, 16L << 10, 0.02));

    static BackwardProfile uniform(int tensors, long bytes, double backwardSeconds) {
        double[] t = new double[tensors];
        long[] b = new long[tensors];
        Arrays.fill(t, backwardSeconds / tensors);
        Arrays.fill(b, bytes);
        return new BackwardProfile(backwardSeconds / 2, t, b);
    }

    /**
     * On network-like profiles and three cost models: MG-WFBP never slower than WFBP in the simulator,
     * and the typing rules hold (last tensor not merged, first not simultaneous, MG-WFBP never
     * simultaneous, at most two all-reduces at once). The benchmark module's SyntheticModelsTest checks
     * the order of all three policies on the synthetic profiles of the paper's models.
     */
    @Test
    void typingRulesHoldOnNetworkLikeProfiles() {
        for (Map.Entry<String, Supplier<BackwardProfile>> e : PROFILES.entrySet()) {
            BackwardProfile p = e.getValue().get();
            for (AllReduceModel m : MODELS) {
                String what = e.getKey() + " " + m;
                double wfbp = WfbpSimulator.simulate(p, m, SyncPolicy.WFBP).iterationSeconds();
                LayerType[] mg = LayerTypes.decide(p, m, SyncPolicy.MG_WFBP);
                LayerType[] asc = LayerTypes.decide(p, m, SyncPolicy.ASC_WFBP);
                double tMg = WfbpSimulator.simulate(p, m, mg).iterationSeconds();
                assertTrue(tMg <= wfbp * (1 + 1e-12), what + ": MG-WFBP " + tMg + " > WFBP " + wfbp);
                for (LayerType[] types : List.of(mg, asc)) {
                    assertNotEquals(MERGED, types[types.length - 1], what);
                    assertNotEquals(SIMULTANEOUS, types[0], what);
                    for (int[] batch : Grouping.of(types).batches) {
                        assertTrue(batch.length <= 2, what + ": " + batch.length + " all-reduces at once");
                    }
                }
                for (LayerType t : mg) {
                    assertNotEquals(SIMULTANEOUS, t, what);
                }
            }
        }
    }

    /** The groups of a typing cover the tensors in order, each a run of merged tensors and the one ending it. */
    @Test
    void groupsAreConsecutiveRuns() {
        LayerType[] t = {MERGED, MERGED, NORMAL, SIMULTANEOUS, MERGED, SIMULTANEOUS, NORMAL, MERGED, NORMAL};
        Grouping g = Grouping.of(t);
        assertArrayEquals(new int[][]{{0, 1, 2}, {3}, {4, 5}, {6}, {7, 8}}, g.groups);
        // {3} and {4, 5} end simultaneous: they join the batch of {0, 1, 2} (group indices 0, 1, 2).
        assertArrayEquals(new int[][]{{0, 1, 2}, {3}, {4}}, g.batches);
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> Grouping.of(new LayerType[]{NORMAL, MERGED})).getMessage().contains("cannot be MERGED"));
    }
}
