package dev.panamax.collectives;

import dev.panamax.testing.Ports;
import dev.panamax.testing.RankProcesses;
import dev.panamax.testing.RankProcesses.Running;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Abort across processes while a peer is frozen with SIGSTOP. */
class AbortProcessTest {
    private static Set<String> shmEntries() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/dev/shm"))) {
            return s.map(p -> p.getFileName().toString())
                    .filter(f -> f.contains("panamax") && !f.startsWith("panamax-bench"))
                    .collect(Collectors.toSet());
        }
    }

    private static void signal(Process p, String sig) throws Exception {
        assertEquals(0, new ProcessBuilder("kill", "-" + sig, Long.toString(p.pid())).inheritIO().start().waitFor());
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void abortWithAFrozenPeerReturnsAndTheOthersNameTheAbortingRank(String transport) throws Exception {
        Set<String> before = shmEntries();
        int n = 4;
        double timeoutSeconds = 60; // far beyond what the test waits: nothing may end by timing out
        int port = Ports.freePort();
        List<Running> ranks = new ArrayList<>();
        try {
            for (int r = 0; r < n; r++) {
                ranks.add(RankProcesses.start(RankProcesses.builder(AbortRankProcess.class, r, n, port,
                        List.of(transport, Double.toString(timeoutSeconds)))));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!ranks.stream().allMatch(r -> r.line("READY") != null)) {
                assertTrue(System.nanoTime() < deadline, "the ranks did not connect");
                Thread.sleep(20);
            }
            Thread.sleep(300);
            Process frozen = ranks.get(1).process();
            signal(frozen, "STOP");
            Thread.sleep(200);

            long abortAt = System.nanoTime();
            ranks.get(0).process().getOutputStream().write("ABORT\n".getBytes(StandardCharsets.UTF_8));
            ranks.get(0).process().getOutputStream().flush();
            assertTrue(ranks.get(0).process().waitFor(10, TimeUnit.SECONDS), "rank 0 did not finish after abort()");
            assertEquals(0, ranks.get(0).process().exitValue(), () -> "rank 0: " + ranks.get(0).lines());
            String returned = ranks.get(0).line("ABORT_RETURNED");
            String failed = ranks.get(0).line("CALL_FAILED");
            assertTrue(returned != null && failed != null && failed.contains("aborted"), () ->
                    "rank 0: " + ranks.get(0).lines());
            double abortMs = Double.parseDouble(returned.split(" ")[1]);
            double callMs = Double.parseDouble(failed.split(" ")[1]);
            // A fresh JVM runs this code cold (class loading, linking string concatenations, filling
            // a stack trace; when no collective holds the lock, abort() also unmaps and closes
            // everything itself), on a machine the other ranks keep busy: bounds well above the warm
            // in-JVM ones of AbortTest, still prompt.
            assertTrue(abortMs < 1000, returned);
            assertTrue(callMs < 1500, failed);

            for (int i = 2; i < n; i++) {
                int r = i;
                Running k = ranks.get(r);
                assertTrue(k.process().waitFor(10, TimeUnit.SECONDS),
                        "rank " + r + " did not fail after rank 0 aborted");
                double seconds = (System.nanoTime() - abortAt) / 1e9;
                assertEquals(3, k.process().exitValue(), () -> "rank " + r + ": " + k.lines());
                String line = k.line("PEER_FAILED");
                assertTrue(line.startsWith("PEER_FAILED 0 "), line);
                System.out.printf("%s: rank 0 abort() %.2f ms, its call threw after %.2f ms; rank %d failed naming "
                        + "rank 0 (%.2f s after the abort)%n",
                        transport, abortMs, callMs, r, seconds);
            }
            // The frozen rank, resumed, finds everyone gone and fails too.
            signal(frozen, "CONT");
            assertTrue(frozen.waitFor(20, TimeUnit.SECONDS), "the resumed rank 1 did not finish");
            assertEquals(3, frozen.exitValue(), () -> "rank 1: " + ranks.get(1).lines());
        } finally {
            for (Running r : ranks) {
                if (r.process().isAlive()) {
                    new ProcessBuilder("kill", "-CONT", Long.toString(r.process().pid())).start().waitFor();
                }
                r.process().destroyForcibly();
                r.process().waitFor(10, TimeUnit.SECONDS);
            }
        }
        assertEquals(before, shmEntries(), "shared memory left behind in /dev/shm");
    }
}
