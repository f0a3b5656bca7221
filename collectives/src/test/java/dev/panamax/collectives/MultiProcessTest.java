package dev.panamax.collectives;

import dev.panamax.testing.Ports;
import dev.panamax.testing.RankProcesses;
import dev.panamax.testing.RankProcesses.Running;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Ranks as real processes: a full job, and a job whose rank is killed with SIGKILL mid-collective. */
class MultiProcessTest {
    /** Rank processes of one job running {@link RankProcess} with {@code args}, on a free port. */
    private static List<Running> launch(int n, String... args) throws IOException {
        int port = Ports.freePort();
        List<Running> ranks = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            ranks.add(RankProcesses.start(RankProcesses.builder(RankProcess.class, r, n, port, List.of(args))));
        }
        return ranks;
    }

    private static Set<String> shmEntries() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/dev/shm"))) {
            // Benchmarks running beside the tests keep their own lockstep counters files there: only transport state
            // counts.
            return s.map(p -> p.getFileName().toString())
                    .filter(f -> f.contains("panamax") && !f.startsWith("panamax-bench"))
                    .collect(Collectors.toSet());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp", "shm user", "tcp user"})
    void fourProcessesAllReduce(String transportAndBuffers) throws Exception {
        String[] t = transportAndBuffers.split(" ");
        // 1M+3 floats: ring chunks of 1 MiB, past the by-reference and by-address thresholds.
        processesAllReduce(4, t[0], t.length > 1 ? t[1] : "shared", 20, 1048579);
    }

    /** {@code n} rank processes all-reduce {@code count} floats {@code iterations} times and check every element. */
    static void processesAllReduce(int n, String transport, String buffers, int iterations,
            long count) throws Exception {
        processesAllReduce(n, transport, buffers, iterations, count, 60);
    }

    /**
     * As above, with the ranks' timeout (rendezvous included) in seconds. A failure shows every
     * rank's exit status and output: the rank that reports is often not the one that failed.
     */
    static void processesAllReduce(int n, String transport, String buffers, int iterations, long count,
            int timeoutSeconds)
            throws Exception {
        processesAllReduce(n, transport, buffers, iterations, count, timeoutSeconds, r -> Map.of());
    }

    /** As above, with environment variables per rank. */
    static void processesAllReduce(int n, String transport, String buffers, int iterations, long count,
            int timeoutSeconds, IntFunction<Map<String, String>> env) throws Exception {
        RankProcesses.runExpectingOk(RankProcess.class, n, env, r -> List.of("OK"),
                Duration.ofSeconds(timeoutSeconds + 60L), transport, Integer.toString(iterations),
                Long.toString(count), Integer.toString(timeoutSeconds), buffers);
    }

    @Test
    void panamaxNodeGroupsRanksIntoSharedMemoryNodes() throws Exception {
        // Ranks 0,1 on node "a" and 2,3 on node "b": shared memory inside a node, TCP between nodes.
        String[] want = {"LINKS self shm tcp tcp", "LINKS shm self tcp tcp", "LINKS tcp tcp self shm",
                "LINKS tcp tcp shm self"};
        RankProcesses.runExpectingOk(RankProcess.class, 4, r -> Map.of("PANAMAX_NODE", r < 2 ? "a" : "b"),
                r -> List.of(want[r], "OK"), Duration.ofSeconds(120), "auto", "3", "1048579", "60");
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void aKilledRankFailsEveryOtherRankNamingIt(String transport) throws Exception {
        killedRank(transport, 5, 60);
    }

    /**
     * Four ranks with a communicator timeout of {@code timeoutSeconds} (which also bounds connecting);
     * rank 2 is killed once all are inside their all-reduce loop, which must happen within
     * {@code connectSeconds}; every other rank must fail naming it within the timeout plus 3 s.
     */
    static void killedRank(String transport, double timeoutSeconds, int connectSeconds) throws Exception {
        killedRank(transport, timeoutSeconds, connectSeconds, 262144);
    }

    /** Ranks sharing memory wait for each other's windows in all-reduces this small, not for messages. */
    @Test
    void aKilledRankFailsEveryOtherRankInSmallAllReducesOverSharedWindows() throws Exception {
        killedRank("shm", 5, 60, 2);
    }

    /** As {@link #killedRank(String, double, int)}, the ranks all-reducing {@code count} floats per call. */
    static void killedRank(String transport, double timeoutSeconds, int connectSeconds, long count) throws Exception {
        Set<String> before = shmEntries();
        List<Running> ranks = launch(4, transport, "100000000", Long.toString(count), Double.toString(timeoutSeconds));
        try {
            // Wait until rank 2 is inside its all-reduce loop, then kill it without warning.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(connectSeconds);
            Process victim = ranks.get(2).process();
            while (!ranks.stream().allMatch(r -> r.lines().stream().anyMatch(l -> l.startsWith("READY")))) {
                assertTrue(System.nanoTime() < deadline, "the ranks did not connect");
                Thread.sleep(20);
            }
            Thread.sleep(300);
            assertTrue(victim.isAlive(), "rank 2 ended early");
            victim.destroyForcibly();
            long killedAt = System.nanoTime();
            for (int r = 0; r < 4; r++) {
                if (r == 2) {
                    continue;
                }
                Process p = ranks.get(r).process();
                long left = Math.max(1, deadline - System.nanoTime());
                assertTrue(p.waitFor(left, TimeUnit.NANOSECONDS), "rank " + r + " hung after rank 2 was killed");
                double seconds = (System.nanoTime() - killedAt) / 1e9;
                List<String> out = ranks.get(r).allOutput();
                assertEquals(3, p.exitValue(), () -> "rank output: " + String.join("\n", out));
                String line = out.stream().filter(s -> s.startsWith("PEER_FAILED")).findFirst().orElseThrow();
                // The rank that detects first names rank 2; the others may name the rank that gave up after it.
                assertTrue(line.startsWith("PEER_FAILED "), line);
                assertTrue(seconds < timeoutSeconds + 1 + 2, "rank " + r + " took " + seconds + " s");
            }
            boolean someoneNamedRank2 = false;
            for (int r = 0; r < 4; r++) {
                if (r != 2) {
                    someoneNamedRank2 |= ranks.get(r).allOutput().stream()
                            .anyMatch(s -> s.startsWith("PEER_FAILED 2 "));
                }
            }
            assertTrue(someoneNamedRank2, "no rank named the killed rank 2");
        } finally {
            for (Running r : ranks) {
                r.process().destroyForcibly();
            }
        }
        assertEquals(before, shmEntries(), "shared memory left behind in /dev/shm");
    }
}
