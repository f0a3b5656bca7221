package dev.panamax.bench.ml;

import dev.panamax.ml.AllReduceModel;
import dev.panamax.ml.BackwardProfile;
import dev.panamax.ml.LayerType;
import dev.panamax.ml.LayerTypes;
import dev.panamax.ml.SyncPolicy;
import dev.panamax.ml.WfbpSimulator;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import static dev.panamax.ml.LayerType.MERGED;
import static dev.panamax.ml.LayerType.SIMULTANEOUS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The synthetic profiles have the paper's tensor counts (Table III) and parameter counts, and the assumed compute
 * times; on them the three policies keep their order.
 */
class SyntheticModelsTest {
    static void check(BackwardProfile p, int tensors, double millionParams, double forward, double backward) {
        assertEquals(tensors, p.tensors());
        double params = p.totalBytes() / 4.0 / 1e6;
        assertTrue(Math.abs(params - millionParams) / millionParams < 0.05,
                params + " M parameters, expected about " + millionParams);
        assertEquals(forward, p.forwardSeconds(), 1e-12);
        assertEquals(backward, p.totalBackwardSeconds(), 1e-9);
    }

    @Test
    void tensorAndParameterCounts() {
        check(SyntheticModels.resnet152(), 467, 60.2, 0.091, 0.182);
        check(SyntheticModels.densenet201(), 604, 20.0, 0.07, 0.14);
        check(SyntheticModels.inceptionV4(), 449, 42.7, 0.062, 0.124);
        check(SyntheticModels.bertBase(), 206, 110, 0.10, 0.20);
    }

    @Test
    void probes() {
        Map<String, Supplier<BackwardProfile>> probes = SyntheticModels.probes();
        assertEquals(List.of("comm-bound", "many-small"), List.copyOf(probes.keySet()));
        BackwardProfile comm = probes.get("comm-bound").get();
        assertEquals(32, comm.tensors());
        assertEquals(32L * (16 << 20), comm.totalBytes());
        assertEquals(0.02, comm.totalBackwardSeconds(), 1e-12);
        BackwardProfile small = probes.get("many-small").get();
        assertEquals(512, small.tensors());
        assertEquals(512L * (16 << 10), small.totalBytes());
    }

    static final List<AllReduceModel> MODELS = List.of(
            AllReduceModel.PAPER_10GBE,
            // of the order of shared memory between processes on one host
            new AllReduceModel(30e-6, 0.5e-9, 1.8),
            // a slow network with a large startup, and links that multiplex well
            new AllReduceModel(5e-3, 4e-9, 1.2));

    /**
     * The most all-reduces a typing starts at once: a group (a run of MERGED tensors and the tensor that
     * ends it) with the groups ending SIMULTANEOUS right after it.
     */
    static int mostAtOnce(LayerType[] types) {
        int most = 0;
        int batch = 0;
        for (LayerType t : types) {
            if (t == MERGED) {
                continue;
            }
            batch = t == SIMULTANEOUS ? batch + 1 : 1;
            most = Math.max(most, batch);
        }
        return most;
    }

    /**
     * On the four synthetic models and three cost models: WFBP >= MG-WFBP >= ASC-WFBP in the
     * simulator (the second is not guaranteed by construction), the typing rules hold (last tensor
     * not merged, first not simultaneous, at most two all-reduces at once), and with the paper's
     * figures the fusion and the simultaneous all-reduces are actually used.
     */
    @Test
    void syntheticModelsOrderAndShape() {
        for (Map.Entry<String, Supplier<BackwardProfile>> e : SyntheticModels.all().entrySet()) {
            BackwardProfile p = e.getValue().get();
            for (AllReduceModel m : MODELS) {
                String what = e.getKey() + " " + m;
                double wfbp = WfbpSimulator.simulate(p, m, SyncPolicy.WFBP).iterationSeconds();
                LayerType[] mg = LayerTypes.decide(p, m, SyncPolicy.MG_WFBP);
                LayerType[] asc = LayerTypes.decide(p, m, SyncPolicy.ASC_WFBP);
                double tMg = WfbpSimulator.simulate(p, m, mg).iterationSeconds();
                double tAsc = WfbpSimulator.simulate(p, m, asc).iterationSeconds();
                assertTrue(tMg <= wfbp * (1 + 1e-12), what + ": MG-WFBP " + tMg + " > WFBP " + wfbp);
                assertTrue(tAsc <= tMg * (1 + 1e-12), what + ": ASC-WFBP " + tAsc + " > MG-WFBP " + tMg);
                for (LayerType[] types : List.of(mg, asc)) {
                    assertNotEquals(MERGED, types[types.length - 1], what);
                    assertNotEquals(SIMULTANEOUS, types[0], what);
                    assertTrue(mostAtOnce(types) <= 2, what + ": " + mostAtOnce(types) + " all-reduces at once");
                }
                for (LayerType t : mg) {
                    assertNotEquals(SIMULTANEOUS, t, what);
                }
                if (m == AllReduceModel.PAPER_10GBE) {
                    assertTrue(tMg < wfbp * 0.9, what + ": fusion should pay with a 1.4 ms startup");
                    assertTrue(List.of(asc).contains(SIMULTANEOUS), what + ": no simultaneous all-reduce chosen");
                }
            }
        }
    }
}
