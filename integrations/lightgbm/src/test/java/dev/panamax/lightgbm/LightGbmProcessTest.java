package dev.panamax.lightgbm;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.testing.Ports;
import dev.panamax.testing.RankProcesses;
import dev.panamax.testing.RankProcesses.Running;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.IntUnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * LightGBM over Panamax with ranks as processes, the real case: the model is the one in-JVM ranks train; a rank
 * killed with SIGKILL mid-training makes every other rank throw, naming it, long before the communicator's
 * timeout (LightGBM's own network waits forever); a process without the job's secret is turned away.
 */
class LightGbmProcessTest {
    /** Far beyond what the tests wait: nothing here may end by timing out. */
    static final int TIMEOUT_SECONDS = 120;
    static final Duration WAIT = Duration.ofSeconds(TIMEOUT_SECONDS);

    private static Running start(int rank, int n, int port, Map<String, String> env, String... args)
            throws IOException {
        ProcessBuilder pb = RankProcesses.builder(LightGbmRankProcess.class, rank, n, port, List.of(args));
        pb.environment().put("PANAMAX_TIMEOUT_SECONDS", Integer.toString(TIMEOUT_SECONDS));
        pb.environment().remove("PANAMAX_SECRET");
        pb.environment().putAll(env);
        return RankProcesses.start(pb);
    }

    private static List<Running> startJob(int n, Map<String, String> env, String... args) throws IOException {
        int port = Ports.freePort();
        List<Running> ranks = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            ranks.add(start(r, n, port, env, args));
        }
        return ranks;
    }

    private static void destroy(List<Running> ranks) {
        for (Running r : ranks) {
            r.process().destroyForcibly();
        }
    }

    /** The hash of the model that {@code n} in-JVM ranks train, as a rank process prints it. */
    private static String modelOfThreads(int n, int iterations) {
        List<Communicator> comms = Panamax.local(n, TIMEOUT_SECONDS * 1_000_000_000L);
        try {
            return Integer.toHexString(RankThreads.onEach(comms, c -> PanamaxLightGbm.train(c,
                    PanamaxLightGbmTest.PARAMS, PanamaxLightGbmTest.part(c.rank(), n), iterations)).getFirst()
                    .hashCode());
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void threeProcessesTrainTheModelThatThreadsTrain(String transport) throws Exception {
        List<Running> ranks = startJob(3, Map.of("PANAMAX_TRANSPORT", transport), "8", "0");
        try {
            String expected = "MODEL " + modelOfThreads(3, 8);
            for (int r = 0; r < 3; r++) {
                Running rank = ranks.get(r);
                assertEquals(0, rank.awaitExit(WAIT), "rank " + r + ": " + rank.lines());
                assertEquals(expected, rank.line("MODEL "), "rank " + r + ": " + rank.lines());
            }
        } finally {
            destroy(ranks);
        }
    }

    @Test
    void aRankKilledMidTrainingFailsEveryOtherRankNamingIt() throws Exception {
        List<Running> ranks = startJob(3, Map.of(), "100000", "20");
        try {
            Running victim = ranks.get(1);
            assertTrue(victim.awaitLine("ITERATION 3", Duration.ofSeconds(60)), "rank 1 trains: " + victim.lines());
            long killed = System.nanoTime();
            victim.process().destroyForcibly(); // SIGKILL: no chance to say goodbye
            for (int r : new int[] {0, 2}) {
                Running rank = ranks.get(r);
                assertEquals(3, rank.awaitExit(Duration.ofSeconds(60)), "rank " + r + " fails: " + rank.lines());
                String failure = rank.line("FAILED ");
                // "LightGbmNetworkException: rank 0: the reduce-scatter that LightGBM called back failed during
                // upcall 49 (...): PeerFailedException: rank 0: peer rank 1 (pid 26728) died", or, when the other
                // survivor noticed first: "... rank 0: rank 1 failed (peer rank 2 (pid 1625) gave up because of it)"
                assertTrue(failure != null && failure.contains("LightGbmNetworkException: rank " + r)
                        && (failure.contains("peer rank 1 (pid " + victim.process().pid() + ") died")
                            || failure.contains("rank " + r + ": rank 1 failed")),
                        "rank " + r + " names rank 1: " + failure);
            }
            double seconds = (System.nanoTime() - killed) / 1e9;
            assertTrue(seconds < TIMEOUT_SECONDS / 4.0, "the others failed after " + seconds + " s, not at once");
        } finally {
            destroy(ranks);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void elasticTrainingGoesOnWithoutARankKilledMidTraining(String transport) throws Exception {
        // 4 processes, 8 iterations of 200 ms or more; rank 2 is killed after its third.
        List<Running> ranks = startJob(4, Map.of("PANAMAX_TRANSPORT", transport), "8", "200", "elastic");
        try {
            Running victim = ranks.get(2);
            assertTrue(victim.awaitLine("ITERATION 3", Duration.ofSeconds(60)), "rank 2 trains: " + victim.lines());
            victim.process().destroyForcibly();
            String recovery = null;
            String trees = null;
            for (int r : new int[] {0, 1, 3}) {
                Running rank = ranks.get(r);
                assertEquals(0, rank.awaitExit(WAIT), "rank " + r + ": " + rank.lines());
                String mine = rank.line("RECOVERY ");
                assertTrue(mine != null && mine.matches("RECOVERY [34] 4 3 \\[2\\] .*"), "rank " + r + ": " + mine);
                recovery = recovery == null ? mine.substring(0, mine.indexOf(']')) : recovery;
                assertEquals(recovery, mine.substring(0, mine.indexOf(']')), "rank " + r);
                trees = trees == null ? rank.line("TREES ") : trees;
                assertEquals(trees, rank.line("TREES "), "the same model on rank " + r);
            }
            // The model of the k iterations that 4 ranks finished, continued over the survivors' rows.
            int k = Integer.parseInt(recovery.split(" ")[1]);
            assertEquals("TREES " + Integer.toHexString(PanamaxLightGbmTest.trees(continuedOverSurvivors(k, 8))
                    .hashCode()), trees);
        } finally {
            destroy(ranks);
        }
    }

    /** The model of {@code k} iterations on 4 in-JVM ranks continued to {@code total} on the parts of 0, 1, 3. */
    private static String continuedOverSurvivors(int k, int total) {
        int[] parts = {0, 1, 3};
        PanamaxLightGbm.Checkpoint checkpoint = new PanamaxLightGbm.Checkpoint(onThreads(4, r -> r, k,
                PanamaxLightGbm.Checkpoint.NONE), k);
        return onThreads(3, r -> parts[r], total, checkpoint);
    }

    private static String onThreads(int n, IntUnaryOperator part, int iterations,
            PanamaxLightGbm.Checkpoint from) {
        List<Communicator> comms = Panamax.local(n, TIMEOUT_SECONDS * 1_000_000_000L);
        try {
            return RankThreads.onEach(comms, c -> PanamaxLightGbm.train(c, PanamaxLightGbmTest.PARAMS,
                    PanamaxLightGbmTest.part(part.applyAsInt(c.rank()), 4), iterations, (i, nanos, booster) -> { },
                    PanamaxLightGbm.Network.PANAMAX, from)).getFirst();
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @Test
    void aProcessWithoutTheJobsSecretIsTurnedAwayAndTheJobTrains() throws Exception {
        int port = Ports.freePort();
        Map<String, String> secret = Map.of("PANAMAX_SECRET", "lightgbm-job-secret");
        List<Running> ranks = new ArrayList<>();
        try {
            ranks.add(start(0, 2, port, secret, "4", "0"));
            Running intruder = start(1, 2, port, Map.of(), "4", "0");
            ranks.add(intruder);
            assertEquals(3, intruder.awaitExit(Duration.ofSeconds(60)), "the intruder fails: " + intruder.lines());
            String failure = intruder.line("FAILED ");
            assertTrue(failure != null && failure.contains("wrong PANAMAX_SECRET"), "it is told why: " + failure);
            Running member = start(1, 2, port, secret, "4", "0");
            ranks.add(member);
            String expected = "MODEL " + modelOfThreads(2, 4);
            for (Running rank : List.of(ranks.get(0), member)) {
                assertEquals(0, rank.awaitExit(WAIT), rank.lines().toString());
                assertEquals(expected, rank.line("MODEL "), rank.lines().toString());
            }
        } finally {
            destroy(ranks);
        }
    }
}
