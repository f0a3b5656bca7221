package dev.panamax.lightgbm;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.testing.Ports;
import dev.panamax.testing.RankProcesses;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

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

    /** A rank process and its output lines, read as they come. */
    private record Rank(Process process, List<String> lines) {
        String line(String prefix) {
            return lines.stream().filter(l -> l.startsWith(prefix)).findFirst().orElse(null);
        }

        boolean awaitLine(String prefix, long timeoutMillis) throws InterruptedException {
            long deadline = System.nanoTime() + timeoutMillis * 1_000_000;
            while (line(prefix) == null && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            return line(prefix) != null;
        }

        int awaitExit(long timeoutSeconds) throws InterruptedException {
            assertTrue(process.waitFor(timeoutSeconds, TimeUnit.SECONDS), "did not exit: " + lines);
            Thread.sleep(100); // the reader thread takes the last lines
            return process.exitValue();
        }
    }

    private static Rank start(int rank, int n, int port, Map<String, String> env, String... args) throws IOException {
        ProcessBuilder pb = RankProcesses.builder(LightGbmRankProcess.class, rank, n, port, List.of(args));
        pb.environment().put("PANAMAX_TIMEOUT_SECONDS", Integer.toString(TIMEOUT_SECONDS));
        pb.environment().remove("PANAMAX_SECRET");
        pb.environment().putAll(env);
        Process p = pb.start();
        List<String> lines = new CopyOnWriteArrayList<>();
        Thread.ofPlatform().daemon().start(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(),
                    StandardCharsets.UTF_8))) {
                for (String l = in.readLine(); l != null; l = in.readLine()) {
                    lines.add(l);
                }
            } catch (IOException ignored) {
                // the process ended
            }
        });
        return new Rank(p, lines);
    }

    private static List<Rank> startJob(int n, Map<String, String> env, String... args) throws IOException {
        int port = Ports.freePort();
        List<Rank> ranks = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            ranks.add(start(r, n, port, env, args));
        }
        return ranks;
    }

    private static void destroy(List<Rank> ranks) {
        for (Rank r : ranks) {
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
        List<Rank> ranks = startJob(3, Map.of("PANAMAX_TRANSPORT", transport), "8", "0");
        try {
            String expected = "MODEL " + modelOfThreads(3, 8);
            for (int r = 0; r < 3; r++) {
                Rank rank = ranks.get(r);
                assertEquals(0, rank.awaitExit(TIMEOUT_SECONDS), "rank " + r + ": " + rank.lines());
                assertEquals(expected, rank.line("MODEL "), "rank " + r + ": " + rank.lines());
            }
        } finally {
            destroy(ranks);
        }
    }

    @Test
    void aRankKilledMidTrainingFailsEveryOtherRankNamingIt() throws Exception {
        List<Rank> ranks = startJob(3, Map.of(), "100000", "20");
        try {
            Rank victim = ranks.get(1);
            assertTrue(victim.awaitLine("ITERATION 3", 60_000), "rank 1 trains: " + victim.lines());
            long killed = System.nanoTime();
            victim.process().destroyForcibly(); // SIGKILL: no chance to say goodbye
            for (int r : new int[] {0, 2}) {
                Rank rank = ranks.get(r);
                assertEquals(3, rank.awaitExit(60), "rank " + r + " fails: " + rank.lines());
                String failure = rank.line("FAILED ");
                // "LightGbmNetworkException: rank 0: the reduce-scatter that LightGBM called back failed during
                // upcall 49 (...): PeerFailedException: rank 0: peer rank 1 (pid 26728) died"
                assertTrue(failure != null && failure.contains("LightGbmNetworkException: rank " + r)
                        && failure.contains("peer rank 1 (pid " + victim.process().pid() + ") died"),
                        "rank " + r + " names rank 1: " + failure);
            }
            double seconds = (System.nanoTime() - killed) / 1e9;
            assertTrue(seconds < TIMEOUT_SECONDS / 4.0, "the others failed after " + seconds + " s, not at once");
        } finally {
            destroy(ranks);
        }
    }

    @Test
    void aProcessWithoutTheJobsSecretIsTurnedAwayAndTheJobTrains() throws Exception {
        int port = Ports.freePort();
        Map<String, String> secret = Map.of("PANAMAX_SECRET", "lightgbm-job-secret");
        List<Rank> ranks = new ArrayList<>();
        try {
            ranks.add(start(0, 2, port, secret, "4", "0"));
            Rank intruder = start(1, 2, port, Map.of(), "4", "0");
            ranks.add(intruder);
            assertEquals(3, intruder.awaitExit(60), "the intruder fails: " + intruder.lines());
            String failure = intruder.line("FAILED ");
            assertTrue(failure != null && failure.contains("wrong PANAMAX_SECRET"), "it is told why: " + failure);
            Rank member = start(1, 2, port, secret, "4", "0");
            ranks.add(member);
            String expected = "MODEL " + modelOfThreads(2, 4);
            for (Rank rank : List.of(ranks.get(0), member)) {
                assertEquals(0, rank.awaitExit(TIMEOUT_SECONDS), rank.lines().toString());
                assertEquals(expected, rank.line("MODEL "), rank.lines().toString());
            }
        } finally {
            destroy(ranks);
        }
    }
}
