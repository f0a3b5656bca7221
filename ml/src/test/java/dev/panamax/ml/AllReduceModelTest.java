package dev.panamax.ml;

import dev.panamax.collectives.plan.LinearFit;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AllReduceModelTest {
    /** Every rank fits the slowest rank's times, so all get the same model (its figures are timings: not checked here).
     * */
    @Test
    void calibrationIsTheSameOnEveryRank() {
        List<AllReduceModel> models = LocalRanks.run(3, comm -> AllReduceModel.calibrate(comm, List.of(4096L, 65536L,
                1L << 20), 1, 5));
        for (AllReduceModel m : models) {
            assertEquals(models.getFirst(), m);
        }
        AllReduceModel m = models.getFirst();
        assertTrue(m.a() >= 0 && m.b() >= 0 && Double.isFinite(m.gamma()), m.toString());
        // A 16 MiB copy takes time: more than 1 ps and less than 1 us per byte on any machine this runs on.
        assertTrue(m.copy() > 1e-12 && m.copy() < 1e-6, m.toString());
    }

    /** The relative-error fit gives back an exact line, and one wild large time moves its a far less than plain least
     * squares'. */
    @Test
    void relativeFitKeepsTheStartupOfTheSmallSizes() {
        double[] m = {4096, 16384, 65536, 262144, 1 << 20, 4 << 20};
        double[] t = new double[m.length];
        for (int i = 0; i < m.length; i++) {
            t[i] = 20e-6 + 1e-9 * m[i];
        }
        LinearFit.Line exact = AllReduceModel.relativeFit(m, t);
        assertEquals(20e-6, exact.alpha(), 1e-12);
        assertEquals(1e-9, exact.beta(), 1e-18);
        t[t.length - 1] *= 1.5;
        double relative = AllReduceModel.relativeFit(m, t).alpha();
        double plain = LinearFit.linear(m, t).alpha();
        assertTrue(Math.abs(relative - 20e-6) < 5e-6, "relative fit a = " + relative);
        assertTrue(Math.abs(plain - 20e-6) > 100e-6, "plain fit a = " + plain);
    }

    /**
     * gamma is read against the measured single, not the fitted line: pairs taking exactly twice the
     * single's transfer give 2 even where the line overestimates the large sizes (as it does over
     * TCP), and the large sizes decide it.
     */
    @Test
    void contentionIsMeasuredAgainstTheSingleTimes() {
        double a = 100e-6;
        double[] one = {0.2e-3, 0.5e-3, 2e-3, 8e-3};
        double[] two = new double[one.length];
        for (int i = 0; i < one.length; i++) {
            two[i] = a + 2 * (one[i] - a);
        }
        assertEquals(2.0, AllReduceModel.contentionAgainstSingles(a, one, two), 1e-12);
        // A noisy small size barely moves it; a line-based fit would not see the factor at all.
        two[0] = 0.6e-3;
        assertEquals(2.0, AllReduceModel.contentionAgainstSingles(a, one, two), 0.01);
        for (int i = 0; i < one.length; i++) {
            two[i] = a + 1.25 * (one[i] - a);
        }
        assertEquals(1.25, AllReduceModel.contentionAgainstSingles(a, one, two), 1e-12);
    }

    /** The pair's own startup: times built with a known one come back; the paper's constructors keep pairA = a. */
    @Test
    void pairStartupIsMeasured() {
        double a = 100e-6;
        double gamma = 2;
        double[] one = {0.12e-3, 0.2e-3, 0.5e-3, 2e-3, 8e-3};
        double[] two = new double[one.length];
        for (int i = 0; i < one.length; i++) {
            two[i] = 130e-6 + gamma * (one[i] - a);
        }
        assertEquals(130e-6, AllReduceModel.pairStartup(a, gamma, one, two), 1e-12);
        AllReduceModel m = new AllReduceModel(a, 1e-9, gamma, 0, 130e-6, Long.MAX_VALUE);
        assertEquals(130e-6 + 1e-9 * (1000 + 500), m.simultaneousSeconds(new double[]{1000, 500}), 1e-15);
        assertEquals(a + 1e-9 * 1000, m.simultaneousSeconds(new double[]{1000}), 1e-15);
        assertEquals(a, new AllReduceModel(a, 1e-9, 1.5).pairA());
        assertThrows(IllegalArgumentException.class, () -> new AllReduceModel(a, 1e-9, 1.5, 0, -1, 1));
    }

    /** The measured times come with the model, and the model is the one calibrate gives. */
    @Test
    void measureKeepsTheTimesItFitted() {
        List<AllReduceModel.Calibration> c = LocalRanks.run(2, comm -> AllReduceModel.measure(comm, List.of(4096L,
                65536L), 1, 3));
        AllReduceModel.Calibration first = c.getFirst();
        assertEquals(2, first.bytes().length);
        assertEquals(65536L, first.bytes()[1]);
        for (int i = 0; i < 2; i++) {
            assertTrue(first.oneSeconds()[i] > 0 && first.pairSeconds()[i] > 0);
        }
        assertEquals(first.model(), c.get(1).model());
    }

    @Test
    void medianRelativeErrorOfTheFit() {
        AllReduceModel m = new AllReduceModel(1e-3, 1e-9, 2);
        // a + b m = 1.001, 1.01, 1.1 ms against 1.001 (0 %), 1.212 (~16.7 %), 2.2 (50 %) measured.
        var c = new AllReduceModel.Calibration(new long[]{1000, 10_000, 100_000},
                new double[]{1.001e-3, 1.212e-3, 2.2e-3},
                new double[]{2e-3, 2e-3, 4e-3}, m);
        assertEquals(0.202 / 1.212, c.medianRelativeError(), 1e-12);
    }

    @Test
    void rejectsBadArguments() {
        assertThrows(IllegalArgumentException.class, () -> new AllReduceModel(-1, 1, 1));
        assertThrows(IllegalArgumentException.class, () -> new AllReduceModel(1, Double.NaN, 1));
        assertThrows(IllegalArgumentException.class, () -> new AllReduceModel(1, 1, 1, -1e-9));
        assertEquals(0, new AllReduceModel(1, 1, 1).copy());
        LocalRanks.run(1, comm -> {
            assertThrows(IllegalArgumentException.class, () -> AllReduceModel.calibrate(comm, List.of(4096L), 1, 1));
            assertThrows(IllegalArgumentException.class, () ->
                    AllReduceModel.calibrate(comm, List.of(4096L, 4098L), 1, 1));
            return null;
        });
    }
}
