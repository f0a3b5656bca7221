package dev.panamax.collectives.plan;

import org.junit.jupiter.api.Test;

import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LinearFitTest {
    private static final double[] SIZES = {8e3, 16e3, 64e3, 256e3, 1e6, 4e6};

    @Test
    void recoversAlphaAndBetaFromExactData() {
        double a = 1.4e-3;
        double b = 1.7e-9; // [ASC-WFBP]'s testbed
        double[] t = new double[SIZES.length];
        for (int i = 0; i < t.length; i++) {
            t[i] = a + b * SIZES[i];
        }
        LinearFit.Line l = LinearFit.linear(SIZES, t);
        assertEquals(a, l.alpha(), a * 1e-9);
        assertEquals(b, l.beta(), b * 1e-9);
        assertEquals(1 / b, l.bandwidth(), 1e-9 / b);
        assertEquals(1, l.r2(), 1e-12);
        assertEquals(a + b * 5e5, l.seconds(5e5), 1e-15);
    }

    @Test
    void recoversAlphaAndBetaFromNoisyData() {
        Random rnd = new Random(42);
        double a = 20e-6;
        double b = 1e-9;
        int n = 200;
        double[] x = new double[n];
        double[] t = new double[n];
        for (int i = 0; i < n; i++) {
            x[i] = 1024.0 * (1 + rnd.nextInt(8192));
            t[i] = (a + b * x[i]) * (1 + 0.02 * rnd.nextGaussian());
        }
        LinearFit.Line l = LinearFit.linear(x, t);
        assertEquals(a, l.alpha(), 0.25 * a);
        assertEquals(b, l.beta(), 0.02 * b);
        assertTrue(l.r2() > 0.99 && l.r2() < 1, "r2 " + l.r2());
    }

    @Test
    void contentionFactor() {
        double a = 1.4e-3;
        double b = 1.7e-9;
        double[] one = new double[SIZES.length];
        double[] two = new double[SIZES.length];
        for (int i = 0; i < SIZES.length; i++) {
            one[i] = PaperFormulas.allReduce(a, b, SIZES[i]);
            two[i] = PaperFormulas.simultaneousAllReduces(a, b, 1.5, SIZES[i]);
        }
        LinearFit.Contention c = LinearFit.contention(SIZES, one, two);
        assertEquals(1.5, c.gamma(), 1e-9);
        assertEquals(1, c.r2(), 1e-12);
        assertEquals(a, c.single().alpha(), a * 1e-9);
        Random rnd = new Random(7);
        for (int i = 0; i < SIZES.length; i++) {
            two[i] *= 1 + 0.01 * rnd.nextGaussian();
        }
        assertEquals(1.5, LinearFit.contention(c.single(), SIZES, two).gamma(), 0.05);
    }

    @Test
    void rejectsDegenerateInput() {
        assertThrows(IllegalArgumentException.class, () -> LinearFit.linear(new double[] {1, 1}, new double[] {2, 3}));
        assertThrows(IllegalArgumentException.class, () -> LinearFit.linear(new double[] {1}, new double[] {2}));
        assertThrows(IllegalArgumentException.class, () -> LinearFit.linear(new double[] {1, 2}, new double[] {2}));
        assertThrows(IllegalArgumentException.class, () ->
                LinearFit.linear(new double[] {1, 2}, new double[] {2, Double.NaN}));
    }
}
