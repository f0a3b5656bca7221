package dev.panamax.bench.perf;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import dev.panamax.collectives.plan.LinearFit;
import java.util.Arrays;

/** panamax-perf with several algorithms, a topology, plots, schedules, the planner and the calibration; ranks are
 * threads. */
class PerfAlgorithmsTest {
    private record Result(int status, String out, String err) {
    }

    private static Result run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = PerfMain.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static List<String[]> rows(String text) {
        List<String[]> rows = new ArrayList<>();
        text.lines().filter(l -> !l.startsWith("#") && !l.isBlank()).forEach(l -> rows.add(l.trim().split("\\s+")));
        return rows;
    }

    @Test
    void everyAlgorithmChecksEveryElementOnATwoByTwoTopology(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("r.json");
        // sizes 12, 48, ... 48K: counts 3, 12, ... that do not divide evenly among 4 ranks at the small end
        Result r = run("allreduce", "-t", "local", "-np", "4", "-a", "ring,rhd,butterfly,reduce-bcast,blueconnect",
                "--topology", "2x2",
                "-c", "1", "-b", "12", "-e", "48K", "-f", "4", "-n", "2", "-w", "1", "--jit-warmup", "10", "--timeout",
                        "60",
                "--json", json.toString());
        assertEquals(0, r.status(), r.out() + r.err());
        List<String[]> rows = rows(r.out());
        List<String> algorithms = List.of("ring", "rhd", "butterfly", "reduce-bcast", "blueconnect");
        assertEquals(algorithms.size() * 7, rows.size(), r.out());
        Map<String, Integer> perAlgorithm = new LinkedHashMap<>();
        for (String[] row : rows) {
            assertEquals("0", row[7], "#wrong of " + String.join(" ", row));
            String alg = row[8];
            String name = alg.contains("(") ? alg.substring(0, alg.indexOf('(')) : alg;
            assertTrue(algorithms.contains(name), alg);
            perAlgorithm.merge(name, 1, Integer::sum);
        }
        algorithms.forEach(a -> assertEquals(7, perAlgorithm.get(a), a));
        assertTrue(r.out().contains("blueconnect(2x2:"), r.out());
        assertTrue(r.out().contains("# Out of bounds values : 0 OK"), r.out());
        assertTrue(r.out().contains("topology 2x2:"), r.out());

        JsonNode doc = new ObjectMapper().readTree(json.toFile());
        assertEquals(35, doc.get("rows").size());
        for (JsonNode row : doc.get("rows")) {
            assertEquals(0, row.get("wrong").asLong(), row.toString());
            assertTrue(algorithms.contains(row.get("algorithm").asText()), row.toString());
            assertFalse(row.get("schedule").asText().isEmpty(), row.toString());
        }
        assertEquals(5, doc.get("avgBusBwByAlgorithm").size());
        assertEquals("2x2", doc.get("environment").get("topology").asText());
    }

    @Test
    void autoAndTheOtherCollectivesOnThreeRanks() {
        Result r = run("allreduce", "-t", "local", "-np", "3", "-a", "auto,ring,rhd,butterfly,reduce-bcast,direct",
                "-c", "1",
                "-b", "4", "-e", "40K", "-f", "10", "-n", "2", "-w", "1", "--jit-warmup", "10");
        assertEquals(0, r.status(), r.out() + r.err());
        List<String[]> rows = rows(r.out());
        assertEquals(6 * 5, rows.size(), r.out());
        rows.forEach(row -> assertEquals("0", row[7], String.join(" ", row)));
        assertTrue(rows.getFirst()[8].startsWith("auto:"), r.out());

        for (String c : List.of("broadcast", "reduce")) {
            Result b = run(c, "-t", "local", "-np", "3", "-r", "1", "-a", "ring,reduce-bcast,auto", "-c", "1", "-b",
                    "8", "-e", "8K", "-f", "32",
                    "-n", "2", "-w", "1", "--jit-warmup", "10");
            assertEquals(0, b.status(), b.out() + b.err());
            rows(b.out()).forEach(row -> assertEquals("0", row[7], c + ": " + String.join(" ", row)));
        }
        for (String c : List.of("reducescatter", "allgather")) {
            Result b = run(c, "-t", "local", "-np", "4", "-a", "ring,rhd", "-c", "1", "-b", "16", "-e", "16K", "-f",
                    "32",
                    "-n", "2", "-w", "1", "--jit-warmup", "10");
            assertEquals(0, b.status(), b.out() + b.err());
            rows(b.out()).forEach(row -> assertEquals("0", row[7], c + ": " + String.join(" ", row)));
        }
    }

    @Test
    void plotsPngAndSvg(@TempDir Path dir) throws Exception {
        Path png = dir.resolve("busbw.png");
        Result r = run("allreduce", "-t", "local", "-np", "2", "-a", "ring,rhd", "-b", "8", "-e", "64K", "-f", "4",
                "-n", "2", "-w", "0",
                "--jit-warmup", "0", "--plot", png.toString());
        assertEquals(0, r.status(), r.out() + r.err());
        byte[] bytes = Files.readAllBytes(png);
        assertTrue(bytes.length > 1000, "PNG of " + bytes.length + " bytes");
        assertArrayEquals(new byte[] {(byte) 0x89, 'P', 'N', 'G'}, Arrays.copyOf(bytes, 4));

        Path svg = dir.resolve("time.svg");
        r = run("allreduce", "-t", "local", "-np", "2", "-a", "ring,rhd", "-b", "8", "-e", "64K", "-f", "4", "-n", "2",
                "-w", "0",
                "--jit-warmup", "0", "--plot", svg.toString(), "--plot-metric", "time");
        assertEquals(0, r.status(), r.out() + r.err());
        String text = Files.readString(svg);
        assertTrue(text.contains("<svg"), text.substring(0, Math.min(200, text.length())));
        assertTrue(text.length() > 1000);
    }

    @Test
    void sizeLabelsAtPowersOfTwo() {
        assertEquals("1K", Plot.sizeLabel(10.0));
        assertEquals("64M", Plot.sizeLabel(26.0));
        assertEquals("8", Plot.sizeLabel(3.0));
        assertEquals("", Plot.sizeLabel(2.5));
    }

    @Test
    void printsSchedulesWithoutMeasuring() {
        Result r = run("allreduce", "-np", "4", "-a", "ring,blueconnect", "--topology", "2x2", "-b", "64", "-e", "1K",
                "--print-schedule");
        assertEquals(0, r.status(), r.out() + r.err());
        assertTrue(r.out().contains("allreduce ring: rank 0 of 4, count 16 x 4 B, 7 stages"), r.out());
        assertTrue(r.out().contains("reduce-scatter step 1/3"), r.out());
        assertTrue(r.out().contains("allreduce blueconnect(2x2: "), r.out());
        assertFalse(r.out().contains("count 256 x"), "only the first size: " + r.out());
        assertFalse(r.out().contains("Avg bus bandwidth"), r.out());

        Result all = run("allreduce", "-np", "4", "-b", "64", "-e", "1K", "--print-schedule=all",
                "--print-schedule-rank", "2", "-a", "rhd");
        assertEquals(0, all.status(), all.out() + all.err());
        assertTrue(all.out().contains("rank 2 of 4, count 256 x 4 B"), all.out());
        assertEquals(5, all.out().lines().filter(l -> l.startsWith("allreduce rhd: rank 2 of 4")).count(), all.out());
    }

    @Test
    void explainsThePlannersChoicePerSize() {
        Result r = run("allreduce", "-np", "4", "-b", "8", "-e", "16M", "-f", "16", "--explain");
        assertEquals(0, r.status(), r.out() + r.err());
        assertEquals(6, r.out().lines().filter(l -> l.startsWith("# size ")).count(), r.out());
        // The planner's table per size marks its choice with '*': the butterfly for small
        // vectors, recursive halving/doubling for large ones on 4 ranks of one host.
        assertEquals(6, r.out().lines().filter(l -> l.startsWith("* ")).count(), r.out());
        assertTrue(r.out().lines().anyMatch(l -> l.startsWith("* butterfly")), r.out());
        assertTrue(r.out().lines().anyMatch(l -> l.startsWith("* rhd")), r.out());
    }

    @Test
    void calibratesWithThreadsAsRanks() {
        Result r = run("--calibrate", "-t", "local", "-np", "2", "-b", "8", "-e", "256K", "-f", "8", "-n", "3", "-w",
                "1", "--jit-warmup", "10");
        assertEquals(0, r.status(), r.out() + r.err());
        assertTrue(r.out().contains("pingpong local 0<->1"), r.out());
        assertTrue(r.out().contains("allreduce ring np 2"), r.out());
        assertTrue(r.out().contains("(k=4)"), r.out());
        assertTrue(r.out().contains("# suggested: --topology 2:bw="), r.out());
    }

    @Test
    void aJitStillAtWorkWhenTheWaitForItEndsIsSaid() {
        // With no time to wait, the first round of every wait ends it out of time, whatever the JIT does.
        String note = "panamax-perf: the JIT of a rank was still at work after";
        Result cal = run("--calibrate", "-t", "local", "-np", "2", "-b", "8", "-e", "64", "-f", "8", "-n", "3", "-w",
                "1", "--jit-warmup", "10", "--jit-quiet-max", "0");
        assertEquals(0, cal.status(), cal.out() + cal.err());
        assertEquals(1, cal.err().lines().filter(l -> l.startsWith(note)).count(), cal.err());
        // the sweep waits before its small rows and again before its first row above 64 KiB
        Result sweep = run("allreduce", "-t", "local", "-np", "2", "-b", "8", "-e", "128K", "-f", "128", "-n", "2",
                "-w", "1", "--jit-warmup", "10", "--jit-quiet-max", "0");
        assertEquals(0, sweep.status(), sweep.out() + sweep.err());
        assertEquals(2, sweep.err().lines().filter(l -> l.startsWith(note)).count(), sweep.err());
    }

    @Test
    void calibrationWithWaitsReportsBothEndsOfEachPingPong() {
        Result r = run("--calibrate", "--waits", "-t", "local", "-np", "3", "-b", "8", "-e", "512", "-f", "8", "-n",
                "20", "-w", "2", "--jit-warmup", "10");
        assertEquals(0, r.status(), r.out() + r.err());
        assertTrue(r.out().contains("# waits per round trip of each ping-pong, rank 0 | the peer"), r.out());
        List<String[]> lines = r.out().lines().filter(l -> !l.startsWith("#") && l.contains(" local 0-1 "))
                .map(l -> l.trim().split("\\s+"))
                .toList();
        assertEquals(List.of("8", "64", "512"), lines.stream().map(l -> l[0]).toList(), r.out());
        for (String[] l : lines) {
            // size, "local", "0-1", 7 counts of rank 0, "|", 7 of the peer
            assertEquals(3 + 7 + 1 + 7, l.length, String.join(" ", l));
            assertEquals("|", l[10], String.join(" ", l));
            for (int end : new int[] {3, 11}) {
                double idled = Double.parseDouble(l[end]);
                double servedSpinning = Double.parseDouble(l[end + 1]);
                assertTrue(idled >= 0 && idled <= 2, "waits that idled per round trip: " + String.join(" ", l));
                assertTrue(servedSpinning >= 0 && servedSpinning <= 1, "a share: " + String.join(" ", l));
                for (int i = end + 2; i < end + 7; i++) {
                    assertTrue(Double.parseDouble(l[i]) >= 0, String.join(" ", l));
                }
            }
        }
    }

    @Test
    void leastSquaresFit() {
        double[] m = {8, 1024, 65536, 1 << 20};
        double[] t = new double[m.length];
        for (int i = 0; i < m.length; i++) {
            t[i] = 2e-6 + 1e-9 * m[i];
        }
        LinearFit.Line f = Calibration.fit(m, t);
        assertEquals(2e-6, f.alpha(), 1e-12);
        assertEquals(1e-9, f.beta(), 1e-15);
        assertEquals(1, f.r2(), 1e-9);
        assertEquals(2.5, Calibration.median(new long[] {4, 1, 3, 2}));
    }

    @Test
    void aSixteenBitWireAndPreMultipliedSumsAreCheckedAndNamedAndOnlyForFloatAllReduces() {
        for (String op : new String[] {"sum", "avg", "max"}) {
            Result r = run("allreduce", "-t", "local", "-np", "3", "--wire", "bfloat16", "-o", op, "-c", "1", "-b",
                    "12", "-e", "48K", "-f", "4", "-n", "2", "-w", "1", "--jit-warmup", "10");
            assertEquals(0, r.status(), r.out() + r.err());
            assertTrue(r.out().contains("type float32/bfloat16"), r.out());
            for (String[] row : rows(r.out())) {
                assertEquals("0", row[7], "#wrong of " + String.join(" ", row));
                assertEquals("auto:all-to-all+all-gather", row[row.length - 1],
                        "what " + String.join(" ", row) + " ran");
            }
        }
        for (String run : new String[] {"allreduce float32", "allreduce float16", "reducescatter float32",
            "reduce float64"}) {
            String[] collectiveAndType = run.split(" ");
            Result r = run(collectiveAndType[0], "-t", "local", "-np", "3", "-o", "premulsum", "-d",
                    collectiveAndType[1], "-c", "1", "-b", "24", "-e", "48K", "-f", "4", "-n", "2", "-w", "1",
                    "--jit-warmup", "10");
            assertEquals(0, r.status(), r.out() + r.err());
            assertTrue(r.out().contains("op premulsum"), r.out());
            for (String[] row : rows(r.out())) {
                assertEquals("0", row[7], "#wrong of " + String.join(" ", row));
                assertEquals("premulsum", row[3]);
            }
        }
        Result premulInts = run("allreduce", "-t", "local", "-np", "2", "-o", "premulsum", "-d", "int32", "-b", "8",
                "-e", "8");
        assertTrue(premulInts.status() != 0 && premulInts.err().contains("-o premulsum"), premulInts.err());
        Result premulGather = run("allgather", "-t", "local", "-np", "2", "-o", "premulsum", "-b", "8", "-e", "8");
        assertTrue(premulGather.status() != 0
                && premulGather.err().contains("-o premulsum: all-reduce, reduce-scatter"), premulGather.err());
        Result gather = run("allgather", "-t", "local", "-np", "2", "--wire", "bfloat16", "-b", "8", "-e", "8");
        assertTrue(gather.status() != 0 && gather.err().contains("--wire bfloat16: all-reduce of float32 or float64"),
                gather.err());
        Result ints = run("allreduce", "-t", "local", "-np", "2", "-d", "int32", "--wire", "float16", "-b", "8", "-e",
                "8");
        assertTrue(ints.status() != 0 && ints.err().contains("not allreduce of int32"), ints.err());
    }
}
