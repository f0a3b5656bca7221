package dev.panamax.collectives;

import dev.panamax.testing.Ports;
import dev.panamax.testing.RankProcesses;
import dev.panamax.testing.RankProcesses.Running;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Elastic communicators across processes: a rank killed with SIGKILL in the middle of all-reduces,
 * the survivors shrink to a communicator whose all-reduces are right, and a replacement process
 * joins through the rendezvous store; the loss of the store's host fails every survivor clearly.
 */
class ElasticProcessTest {
    private static final double TIMEOUT_SECONDS = 20;

    private static List<Running> start(int n, int port, String transport, String mode) throws Exception {
        List<Running> ranks = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            ranks.add(RankProcesses.start(RankProcesses.builder(ElasticRankProcess.class, r, n, port,
                    List.of(transport, Double.toString(TIMEOUT_SECONDS), mode))));
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!ranks.stream().allMatch(r -> r.line("READY") != null)) {
            assertTrue(System.nanoTime() < deadline, "the ranks did not connect: " + ranks);
            assertTrue(ranks.stream().allMatch(r -> r.process().isAlive()), "a rank ended: " + ranks);
            Thread.sleep(20);
        }
        Thread.sleep(300); // into the all-reduces
        return ranks;
    }

    private static void kill(Running r) throws Exception {
        assertEquals(0, new ProcessBuilder("kill", "-KILL", Long.toString(r.process().pid())).start().waitFor());
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", "tcp"})
    void survivorsOfAKilledRankShrinkAndAReplacementJoins(String transport) throws Exception {
        int n = 4;
        int port = Ports.freePort();
        List<Running> ranks = start(n, port, transport, "grow");
        List<Running> all = new ArrayList<>(ranks);
        try {
            kill(ranks.get(2));
            for (int r : new int[] {0, 1, 3}) {
                Running p = ranks.get(r);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
                while (p.line("SHRUNK") == null) {
                    assertTrue(System.nanoTime() < deadline && p.process().isAlive(), "rank " + r + ": " + p);
                    Thread.sleep(20);
                }
                assertEquals("SHRUNK 3 " + (r < 2 ? r : 2) + " 0,1,3", p.line("SHRUNK"), "rank " + r);
            }
            // The replacement joins the grow the survivors are waiting in.
            Running joiner = RankProcesses.start(RankProcesses.builder(ElasticRankProcess.class, 0, n, port,
                    List.of(transport, Double.toString(TIMEOUT_SECONDS), "join")));
            all.add(joiner);
            assertEquals(0, joiner.awaitExit(Duration.ofSeconds(40)), joiner.toString());
            assertEquals("GROWN 4 3 0,1,3,-1", joiner.line("GROWN"));
            for (int r : new int[] {0, 1, 3}) {
                Running p = ranks.get(r);
                assertEquals(0, p.awaitExit(Duration.ofSeconds(20)), "rank " + r + ": " + p);
                assertEquals("GROWN 4 " + (r < 2 ? r : 2) + " 0,1,3,-1", p.line("GROWN"), "rank " + r);
            }
        } finally {
            for (Running r : all) {
                r.process().destroyForcibly();
            }
        }
    }

    @Test
    void losingTheStoresHostFailsEverySurvivorClearly() throws Exception {
        int n = 3;
        List<Running> ranks = start(n, Ports.freePort(), "shm", "shrink");
        try {
            kill(ranks.get(0));
            for (int r = 1; r < n; r++) {
                Running p = ranks.get(r);
                assertEquals(4, p.awaitExit(Duration.ofSeconds(15)), "rank " + r + ": " + p);
                String failed = p.line("FAILED");
                assertTrue(failed.contains("rendezvous store"), "rank " + r + ": " + failed);
            }
        } finally {
            for (Running r : ranks) {
                r.process().destroyForcibly();
            }
        }
    }
}
