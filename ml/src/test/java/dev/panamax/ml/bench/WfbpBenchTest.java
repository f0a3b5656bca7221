package dev.panamax.ml.bench;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The measured-against-simulated verdict of {@link WfbpBench} (policies in SyncPolicy order: WFBP, MG_WFBP, ASC_WFBP). */
class WfbpBenchTest {
    private static final double[] SIMULATED = {3.0, 2.0, 1.0};

    @Test
    void everyRoundInTheSimulatedOrderIsTheSameOrder() {
        double[][] rounds = {{30, 31, 29}, {20, 21, 19}, {10, 11, 12}};
        assertEquals("same order", WfbpBench.verdict(rounds, SIMULATED));
    }

    @Test
    void roundsThatDisagreeLeaveThePairOpen() {
        // MG and ASC swap places in the second round.
        double[][] rounds = {{30, 31, 29}, {20, 10, 19}, {10, 11, 12}};
        assertEquals("same order where resolved (2 of 3 pairs; 1 within run-to-run noise)", WfbpBench.verdict(rounds, SIMULATED));
    }

    @Test
    void aPairMeasuredTheOtherWayInEveryRoundDiffers() {
        double[][] rounds = {{30, 31, 29}, {10, 11, 12}, {20, 21, 19}};
        assertEquals("order differs (1 of 3 simulated pairs measured the other way in every round)", WfbpBench.verdict(rounds, SIMULATED));
    }

    @Test
    void simulatedTiesAreNotJudged() {
        double[][] rounds = {{30, 31, 29}, {10, 11, 12}, {20, 21, 19}};
        assertEquals("same order", WfbpBench.verdict(rounds, new double[]{3.0, 1.0, 1.0}));
    }
}
