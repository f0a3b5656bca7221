package dev.panamax.bench.tools;

import dev.panamax.memory.DataType;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The error report's measurements: float32 far below bfloat16, the 16-bit wire at the inputs' floor. */
class WireTypeErrorsTest {
    @Test
    void theSixteenBitWireStaysAtTheFloorWhileTheRingGrows() {
        int n = 6;
        float[][] x = WireTypeErrors.inputs(n, 4099, 3);
        double[] exact = new double[4099];
        double[] magnitude = new double[4099];
        for (float[] r : x) {
            for (int i = 0; i < r.length; i++) {
                exact[i] += r[i];
                magnitude[i] += Math.abs(r[i]);
            }
        }
        WireTypeErrors.Error f32 = WireTypeErrors.error(WireTypeErrors.allReduce(n, x, "ring", DataType.FLOAT32, null),
                exact, magnitude);
        WireTypeErrors.Error ring = WireTypeErrors.error(
                WireTypeErrors.allReduce(n, x, "ring", DataType.BFLOAT16, null), exact, magnitude);
        WireTypeErrors.Error wire = WireTypeErrors.error(
                WireTypeErrors.allReduce(n, x, null, DataType.FLOAT32, DataType.BFLOAT16), exact, magnitude);
        assertTrue(f32.mean() < 1e-6 && f32.max() < 1e-6, "float32: " + f32);
        assertTrue(wire.mean() < 0.8 * ring.mean(), "wire " + wire + ", ring " + ring);
        assertTrue(wire.mean() > 1e-3 && wire.mean() < 4e-3, "bfloat16 rounding of the inputs: " + wire);
        assertNull(WireTypeErrors.allReduce(5, WireTypeErrors.inputs(5, 16, 1), "blueconnect", DataType.FLOAT32,
                null), "BlueConnect on hosts of 2 needs an even rank count");
        assertEquals(0.0, WireTypeErrors.error(exact, exact, magnitude).max());
    }
}
