package dev.panamax.ml.bench;

import dev.panamax.ml.BackwardProfile;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The synthetic profiles have the paper's tensor counts (Table III) and parameter counts, and the assumed compute times. */
class SyntheticModelsTest {
    static void check(BackwardProfile p, int tensors, double millionParams, double forward, double backward) {
        assertEquals(tensors, p.tensors());
        double params = p.totalBytes() / 4.0 / 1e6;
        assertTrue(Math.abs(params - millionParams) / millionParams < 0.05, params + " M parameters, expected about " + millionParams);
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
        var probes = SyntheticModels.probes();
        assertEquals(java.util.List.of("comm-bound", "many-small"), java.util.List.copyOf(probes.keySet()));
        BackwardProfile comm = probes.get("comm-bound").get();
        assertEquals(32, comm.tensors());
        assertEquals(32L * (16 << 20), comm.totalBytes());
        assertEquals(0.02, comm.totalBackwardSeconds(), 1e-12);
        BackwardProfile small = probes.get("many-small").get();
        assertEquals(512, small.tensors());
        assertEquals(512L * (16 << 10), small.totalBytes());
    }
}
