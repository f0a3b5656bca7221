package dev.panamax.bench.ml;

import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The measured-against-simulated verdict of {@link WfbpBench} (policies in SyncPolicy order: WFBP, MG_WFBP, ASC_WFBP).
 * */
class WfbpBenchTest {
    private static final double[] SIMULATED = {3.0, 2.0, 1.0};
    private static final int TURNS = 40;

    /** Per-turn times: policy k takes base[k], except in the turns listed for it, where it takes swapped[k]. */
    private static double[][] laps(double[] base, double[] swapped, int swappedTurns) {
        double[][] laps = new double[base.length][TURNS];
        for (int k = 0; k < base.length; k++) {
            Arrays.fill(laps[k], base[k]);
            for (int t = 0; t < swappedTurns; t++) {
                laps[k][t * 2] = swapped[k];
            }
        }
        return laps;
    }

    @Test
    void signTestMatchesTheBinomialTail() {
        assertEquals(1.0, WfbpBench.signTestP(5, 5), 1e-12);
        // 2 * P(X <= 0) for n = 5: 2 / 32.
        assertEquals(2.0 / 32, WfbpBench.signTestP(5, 0), 1e-12);
        // 2 * P(X <= 2), n = 10: 2 * (1 + 10 + 45) / 1024.
        assertEquals(2.0 * 56 / 1024, WfbpBench.signTestP(8, 2), 1e-12);
        assertEquals(WfbpBench.signTestP(2, 8), WfbpBench.signTestP(8, 2), 1e-15);
        assertEquals(1.0, WfbpBench.signTestP(0, 0), 1e-12);
        assertTrue(WfbpBench.signTestP(1000, 0) < 1e-300 || WfbpBench.signTestP(1000, 0) == 0);
    }

    @Test
    void everyTurnInTheSimulatedOrderIsTheSameOrder() {
        assertEquals("same order", WfbpBench.verdict(laps(new double[]{30, 20, 10}, new double[]{30, 20, 10}, 0),
                SIMULATED, 1e-3));
    }

    @Test
    void aFewSwappedTurnsStillResolve() {
        // MG and ASC swap places in 8 of 40 turns: 32 to 8, p = 1.7e-4.
        double[][] laps = laps(new double[]{30, 20, 10}, new double[]{30, 10, 20}, 8);
        assertEquals("same order", WfbpBench.verdict(laps, SIMULATED, 1e-3));
    }

    @Test
    void turnsThatSplitEvenlyLeaveThePairOpen() {
        // MG and ASC swap places in 15 of 40 turns: 25 to 15, p = 0.15.
        double[][] laps = laps(new double[]{30, 20, 10}, new double[]{30, 10, 20}, 15);
        assertEquals("same order where resolved (2 of 3 pairs; 1 within the noise)",
                WfbpBench.verdict(laps, SIMULATED, 1e-3));
    }

    @Test
    void aPairMeasuredTheOtherWayDiffers() {
        double[][] laps = laps(new double[]{30, 10, 20}, new double[]{30, 10, 20}, 0);
        assertEquals("order differs (1 of 3 simulated pairs measured the other way)",
                WfbpBench.verdict(laps, SIMULATED, 1e-3));
    }

    @Test
    void simulatedTiesAreNotJudged() {
        double[][] laps = laps(new double[]{30, 10, 20}, new double[]{30, 10, 20}, 0);
        assertEquals("same order", WfbpBench.verdict(laps, new double[]{3.0, 1.0, 1.0}, 1e-3));
    }

    @Test
    void simulatedGapsWithinTheModelErrorAreTies() {
        // MG measured faster than ASC every turn, but the simulation has them 10 % apart under a 25 % model error.
        double[][] laps = laps(new double[]{30, 10, 20}, new double[]{30, 10, 20}, 0);
        double[] simulated = {3.0, 1.1, 1.0};
        assertEquals("order differs (1 of 3 simulated pairs measured the other way)",
                WfbpBench.verdict(laps, simulated, 0.05));
        assertEquals("same order", WfbpBench.verdict(laps, simulated, 0.25));
    }

    @Test
    void pairLinesGiveRatiosAndWins() {
        double[][] laps = laps(new double[]{30, 20, 10}, new double[]{30, 10, 20}, 15);
        var lines = WfbpBench.pairs(laps, SIMULATED);
        assertEquals(3, lines.size());
        assertEquals("WFBP / MG_WFBP: simulated 1.500, measured 1.500 (median per turn); MG_WFBP faster in 40 of 40 "
                + "turns, p = 1.8e-12",
                lines.get(0));
        assertTrue(lines.get(2)
                .startsWith("MG_WFBP / ASC_WFBP: simulated 2.000, measured 2.000 (median per turn); ASC_WFBP faster "
                + "in 25 of 40"),
                lines.get(2));
    }
}
