package dev.panamax.bench.examples;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.lightgbm.PanamaxLightGbm;
import dev.panamax.testing.Ports;
import dev.panamax.testing.RankProcesses;
import dev.panamax.testing.RankProcesses.Running;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The LightGBM example on 3 in-JVM ranks (LightGBM's network is per thread): every rank ends with the same
 * model, and it learns about as well as one machine on all the rows. Elastic, as {@code scripts/lightgbm-example
 * --recoveries 1} runs it: 4 processes, rank 2 SIGKILLs itself, the others end with one model.
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

    @Test
    void elasticTrainingGoesOnWithoutAKilledRank() throws Exception {
        int n = 4;
        int port = Ports.freePort();
        List<String> args = List.of("--rows", "20000", "--features", "10", "--iterations", "12", "--leaves", "15",
                "--recoveries", "1", "--kill-rank", "2", "--kill-iteration", "5");
        List<Running> all = new ArrayList<>();
        try {
            for (int r = 0; r < n; r++) {
                all.add(RankProcesses.start(RankProcesses.builder(LightGbmExample.class, r, n, port, args)));
            }
            assertEquals(137, all.get(2).awaitExit(Duration.ofSeconds(120)), all.get(2).toString());
            for (int r : new int[] {0, 1, 3}) {
                assertEquals(0, all.get(r).awaitExit(Duration.ofSeconds(60)), all.get(r).toString());
            }
            Running zero = all.get(0);
            String recovered = zero.line("recovered: ");
            assertTrue(recovered != null && recovered.matches(
                    "recovered: rank\\(s\\) \\[2\\] of 4 lost, 3 ranks go on from iteration [45] .*"), zero.toString());
            String last = zero.line("mean iteration ");
            assertTrue(last != null && last.endsWith("over 15000 rows; same model on every rank: true"),
                    zero.toString());
        } finally {
            for (Running r : all) {
                r.process().destroyForcibly();
            }
        }
    }
}
