package dev.panamax.bench.perf;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code panamax-perf --jfr}: the recording holds the Panamax events with their fields. */
class PerfJfrTest {
    @Test
    void aLocalRunRecordsCollectiveAndStepEvents(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("run.jfr");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int status = PerfMain.run(new String[] {"allreduce", "-t", "local", "-np", "2", "-b", "8", "-e", "512", "-f",
                "8", "-n", "3", "-w", "1",
                "--jit-warmup", "0", "-a", "ring", "--timeout", "30", "--jfr", file.toString()},
                new PrintStream(out, true, StandardCharsets.UTF_8), System.err);
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, status, text);
        assertTrue(text.contains("# jfr: " + file.toAbsolutePath()), text);
        assertTrue(Files.size(file) > 0);
        List<RecordedEvent> events = RecordingFile.readAllEvents(file);
        List<RecordedEvent> collectives = events.stream().filter(e -> e.getEventType().getName()
                .equals(JfrRecording.COLLECTIVE)).toList();
        List<RecordedEvent> steps = events.stream().filter(e -> e.getEventType().getName().equals(JfrRecording.STEP))
                .toList();
        // 512-byte all-reduces with the measured ring, on both ranks.
        List<RecordedEvent> sized = collectives.stream()
                .filter(e -> e.getString("collective").equals("allreduce") && e.getLong("bytes") == 512
                && e.getString("algorithm").startsWith("ring"))
                .toList();
        assertTrue(sized.size() >= 2 * 3, () -> sized.size() + " events: " + sized);
        assertTrue(sized.stream().anyMatch(e -> e.getInt("rank") == 0)
                && sized.stream().anyMatch(e -> e.getInt("rank") == 1));
        RecordedEvent e = sized.getFirst();
        assertEquals(2, e.getInt("size"));
        assertEquals(128, e.getLong("count"));
        assertEquals("float32", e.getString("type"));
        assertTrue(!e.getBoolean("failed") && e.getString("error") == null, e::toString);
        assertTrue(e.getDuration().toNanos() > 0, e::toString);
        RecordedEvent s = steps.stream().filter(x -> x.getLong("bytesSent") == 256 && x.getInt("rank") == 1).findFirst()
                .orElseThrow();
        assertEquals("0", s.getString("peers"));
        assertEquals(256, s.getLong("bytesReceived"));
        assertTrue(s.getString("label").contains("step"), s::toString);
    }

    @Test
    void fileNamesAndStepThresholds() {
        assertEquals(Path.of("/tmp/run.rank3.jfr"), JfrRecording.rankFile(Path.of("/tmp/run.jfr"), 3));
        assertEquals(Path.of("out.rank0.jfr"), JfrRecording.rankFile(Path.of("out"), 0));
        assertNull(JfrRecording.parseThreshold("off"));
        assertEquals(Duration.ZERO, JfrRecording.parseThreshold("all"));
        assertEquals(Duration.ofNanos(500_000), JfrRecording.parseThreshold("500us"));
        assertEquals(Duration.ofMillis(2), JfrRecording.parseThreshold("2ms"));
        assertThrows(IllegalArgumentException.class, () -> JfrRecording.parseThreshold("2 parsecs"));
    }
}
