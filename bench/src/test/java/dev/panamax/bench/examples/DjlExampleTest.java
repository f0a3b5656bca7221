package dev.panamax.bench.examples;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.testing.Ports;
import dev.panamax.testing.RankProcesses;
import dev.panamax.testing.RankProcesses.Running;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The DJL example on 2 processes (DJL's PyTorch engine trains one model per JVM) prints the loss curve that one
 * rank in this JVM computes with the same global batch, every gradient exchanged in place.
 */
class DjlExampleTest {
    static final Duration WAIT = Duration.ofSeconds(120);
    static final String[] ARGS = {"--steps", "30", "--batch", "32", "--hidden", "32", "--warmup", "5", "--every",
        "1"};

    @Test
    void twoProcessesPrintOneRanksLossCurve() throws Exception {
        DjlExample.Result alone;
        List<Communicator> comms = Panamax.local(1, WAIT.toNanos());
        try {
            alone = DjlExample.run(comms.getFirst(), DjlExample.Options.parse(ARGS));
        } finally {
            RankThreads.closeAll(comms);
        }
        assertTrue(alone.losses()[29] < alone.losses()[0] * 0.5, "it learns: " + alone.losses()[0] + " -> "
                + alone.losses()[29]);
        int port = Ports.freePort();
        List<Running> ranks = new ArrayList<>();
        try {
            for (int r = 0; r < 2; r++) {
                ranks.add(RankProcesses.start(RankProcesses.builder(DjlExample.class, r, 2, port, List.of(ARGS))));
            }
            for (Running rank : ranks) {
                assertEquals(0, rank.awaitExit(WAIT), rank.lines().toString());
            }
            Running first = ranks.getFirst();
            assertNotNull(first.line("# DJL"), first.lines().toString());
            assertTrue(first.line("# DJL").contains("6 gradients exchanged in place, 0 copied"), first.line("# DJL"));
            for (int s = 1; s <= 30; s++) {
                String line = first.line(String.format(Locale.ROOT, "step %4d  loss ", s));
                assertNotNull(line, "step " + s + ": " + first.lines());
                float loss = Float.parseFloat(line.substring(line.lastIndexOf(' ') + 1));
                assertEquals(alone.losses()[s - 1], loss, 1e-4f, "the loss of the global batch at step " + s);
            }
            assertTrue(first.lines().stream().anyMatch(l -> l.contains(" samples/s, ")), first.lines().toString());
        } finally {
            for (Running r : ranks) {
                r.process().destroyForcibly();
            }
        }
    }
}
