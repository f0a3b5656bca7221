package dev.panamax.bench.examples;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.lightgbm.PanamaxLightGbm;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The LightGBM example on 3 in-JVM ranks (LightGBM's network is per thread): every rank ends with the same
 * model, and it learns about as well as one machine on all the rows.
 */
class LightGbmExampleTest {
    static final Duration TIMEOUT = Duration.ofSeconds(60);

    static List<LightGbmExample.Result> run(int ranks) {
        List<Communicator> comms = Panamax.local(ranks, TIMEOUT.toNanos());
        try {
            return RankThreads.onEach(comms, comm ->
                    LightGbmExample.run(comm, 6000, 10, 8, 15, 3, 2, PanamaxLightGbm.Network.PANAMAX));
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @Test
    void threeRanksTrainOneModelAsGoodAsOneMachine() {
        double single = run(1).getFirst().logLoss();
        List<LightGbmExample.Result> results = run(3);
        for (LightGbmExample.Result r : results) {
            assertTrue(r.sameModel(), "every rank ends with the same model");
            assertEquals(results.getFirst().logLoss(), r.logLoss(), 0.0, "the loss is summed over all rows");
            assertTrue(Math.abs(r.logLoss() - single) < 0.02, "3 ranks " + r.logLoss() + ", one machine " + single);
        }
        assertTrue(single < 0.6, "it learned: log-loss " + single + " (about 0.69 untrained)");
    }
}
