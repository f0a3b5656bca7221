package dev.panamax.bench.perf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** panamax-perf from its entry point: exit statuses, and a small sweep with its table and JSON file. */
class PerfMainTest {
    @Test
    void badCommandLinesExitWithStatus2() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8);
        assertEquals(2, PerfMain.run(new String[] {"allreduce", "-a", "tree"}, System.out, errStream));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("algorithm 'tree'"));
        assertEquals(2, PerfMain.run(new String[] {"allreduce", "--no-such-option"}, System.out, errStream));
        assertEquals(2, PerfMain.run(new String[] {}, System.out, errStream));
    }

    @Test
    void runsASmallSweepWithThreadsAsRanks(@TempDir Path dir) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Path json = dir.resolve("r.json");
        int status = PerfMain.run(new String[] {"allreduce", "-t", "local", "-np", "3", "-b", "8", "-e", "4K", "-n",
                "3", "-w", "1",
                "--jit-warmup", "5", "--percentiles", "--json", json.toString(), "--timeout", "30"},
                new PrintStream(out, true, StandardCharsets.UTF_8), System.err);
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, status, text);
        assertTrue(text.startsWith("# panamax-perf allreduce: np 3, transport local, algorithm auto, type float32, op "
                + "sum, buffers communicator"), text);
        assertTrue(text.contains("# Avg bus bandwidth : "), text);
        long rows = text.lines().filter(l -> !l.startsWith("#")).count();
        assertEquals(10, rows, text);
        String doc = Files.readString(json);
        assertTrue(doc.contains("\"collective\" : \"allreduce\""), doc);
        assertTrue(doc.contains("\"links\" : [ \"local\" ]"), doc);
        assertTrue(doc.contains("\"p99Us\""), doc);
    }

    @Test
    void aSweepAcross64KiBWarmsItsLargerRowsToo() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int status = PerfMain.run(new String[] {"allreduce", "-t", "local", "-np", "3", "-b", "32K", "-e", "256K", "-n",
                "2", "-w", "1", "--jit-warmup", "32", "--timeout", "30"},
                new PrintStream(out, true, StandardCharsets.UTF_8), System.err);
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, status, text);
        assertEquals(4, text.lines().filter(l -> !l.startsWith("#")).count(), text);
        assertTrue(text.contains("Out of bounds values : 0 OK"), text);
    }
}
