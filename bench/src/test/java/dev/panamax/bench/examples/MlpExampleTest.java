package dev.panamax.bench.examples;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.ml.AllReduceModel;
import dev.panamax.ml.SyncPolicy;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Data-parallel training on 4 in-JVM ranks ends where single-process training on the same global batches does. */
class MlpExampleTest {
    static final MlpExample.Config CONFIG = new MlpExample.Config(16, 32, 2048, 64, 200, 0.5, 7);
    /** Collective timeout: short, so that a bug fails fast. */
    static final Duration TIMEOUT = Duration.ofSeconds(20);

    static void agree(SyncPolicy policy, AllReduceModel model) {
        double single = MlpExample.trainSingle(CONFIG);
        List<Communicator> comms = Panamax.local(4, TIMEOUT.toNanos());
        List<Double> losses;
        try {
            losses = RankThreads.onEach(comms, comm -> MlpExample.trainDistributed(comm, CONFIG, policy, model));
        } finally {
            RankThreads.closeAll(comms);
        }
        for (double d : losses) {
            assertEquals(losses.getFirst(), d, 0.0, "every rank ends with the same weights");
            assertTrue(Math.abs(d - single) <= 1e-4 * Math.abs(single),
                    policy + ": distributed " + d + ", single " + single);
        }
        // And it learned something: the initial loss is about ln 2.
        assertTrue(single < 0.6, "final loss " + single);
    }

    @Test
    void wfbpAgreesWithSingleProcess() {
        agree(SyncPolicy.WFBP, null);
    }

    /** A model under which the four tensors are fused and paired. */
    @Test
    void ascWfbpAgreesWithSingleProcess() {
        agree(SyncPolicy.ASC_WFBP, new AllReduceModel(1e-3, 1e-9, 1.0));
    }

    /** With the model calibrated on the ranks ({@link AllReduceModel#calibrate}). */
    @Test
    void mgWfbpWithCalibratedModelAgreesWithSingleProcess() {
        agree(SyncPolicy.MG_WFBP, null);
    }
}
