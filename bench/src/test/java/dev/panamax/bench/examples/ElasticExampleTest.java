package dev.panamax.bench.examples;

import dev.panamax.testing.Ports;
import dev.panamax.testing.RankProcesses;
import dev.panamax.testing.RankProcesses.Running;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The elastic example as {@code scripts/elastic-example} runs it: 4 rank processes over shared memory,
 * rank 2 SIGKILLs itself in step 40, the survivors shrink, and at step 80 a fifth process joins; the
 * loss curve is the one-process curve, step by step, and the replacement ends with the same loss.
 */
class ElasticExampleTest {
    @Test
    void aKilledRankAndItsReplacementLeaveTheLossCurveOfOneProcess() throws Exception {
        int n = 4;
        int port = Ports.freePort();
        List<String> args = List.of("--steps", "120", "--kill-step", "40", "--regrow-step", "80");
        List<Running> all = new ArrayList<>();
        try {
            for (int r = 0; r < n; r++) {
                all.add(RankProcesses.start(RankProcesses.builder(ElasticExample.class, r, n, port, args)));
            }
            List<String> joinArgs = new ArrayList<>(args);
            joinArgs.add("--join");
            Running joiner = RankProcesses.start(RankProcesses.builder(ElasticExample.class, 0, n, port, joinArgs));
            all.add(joiner);
            assertEquals(0, all.get(0).awaitExit(Duration.ofSeconds(120)), all.get(0).toString());
            assertEquals(137, all.get(2).awaitExit(Duration.ofSeconds(10)), all.get(2).toString());
            for (int r : new int[] {1, 3}) {
                assertEquals(0, all.get(r).awaitExit(Duration.ofSeconds(30)), all.get(r).toString());
            }
            assertEquals(0, joiner.awaitExit(Duration.ofSeconds(30)), joiner.toString());

            Running zero = all.get(0);
            assertTrue(zero.line("shrink at step 40: 4 -> 3 ranks") != null, zero.toString());
            assertTrue(zero.line("grow at step 80: 3 -> 4 ranks") != null, zero.toString());
            List<String> curve = zero.lines().stream().filter(l -> l.startsWith("step ")).toList();
            assertEquals(4, curve.size(), zero.toString());
            assertTrue(curve.get(1).startsWith("step 60 ranks 3 "), curve.toString());
            assertTrue(curve.get(3).startsWith("step 120 ranks 4 "), curve.toString());
            for (String l : curve) {
                assertAgree(l);
            }
            String last = zero.line("loss elastic=");
            assertNotNull(last, zero.toString());
            assertAgree(last);
            String joined = joiner.line("joined, trained to the end: loss ");
            assertNotNull(joined, joiner.toString());
            assertEquals(last.substring(last.indexOf('=') + 1, last.indexOf(' ', last.indexOf('='))),
                    joined.substring(joined.lastIndexOf(' ') + 1), "the replacement ends with rank 0's model");
        } finally {
            for (Running r : all) {
                r.process().destroyForcibly();
            }
        }
    }

    /** "... loss elastic=A single=B": A and B within rounding of the different reduction orders. */
    private static void assertAgree(String line) {
        double elastic = Double.parseDouble(line.replaceAll(".*elastic=([-0-9.]+).*", "$1"));
        double single = Double.parseDouble(line.replaceAll(".*single=([-0-9.]+).*", "$1"));
        assertTrue(Math.abs(elastic - single) <= 1e-9, line);
    }
}
