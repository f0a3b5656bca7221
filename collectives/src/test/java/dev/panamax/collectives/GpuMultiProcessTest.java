package dev.panamax.collectives;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rank processes sharing one GPU run {@link GpuCommunicator} all-reduces (ring and rhd) through
 * CUDA IPC and check every element ({@link GpuRankProcess}). Skips with the reason without CUDA or
 * a device; with {@code PANAMAX_REQUIRE_GPU=1} that reason fails the test instead.
 */
@Tag("gpu")
class GpuMultiProcessTest {
    @ParameterizedTest(name = "{0} processes")
    @ValueSource(ints = {2, 3})
    void processesAllReduceDeviceMemory(int n) throws Exception {
        GpuTestSupport.requireGpu(false, 1);
        int port = Ranks.freePort();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<Process> ranks = new ArrayList<>();
        List<File> logs = new ArrayList<>();
        try {
            for (int r = 0; r < n; r++) {
                File log = Files.createTempFile("panamax-gpu-rank" + r, ".log").toFile();
                log.deleteOnExit();
                ProcessBuilder pb = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "--add-modules", "jdk.incubator.vector",
                        "-cp", System.getProperty("java.class.path"), GpuRankProcess.class.getName())
                        .redirectErrorStream(true).redirectOutput(log);
                pb.environment().put("PANAMAX_RANK", Integer.toString(r));
                pb.environment().put("PANAMAX_WORLD_SIZE", Integer.toString(n));
                pb.environment().put("PANAMAX_MASTER_ADDR", "127.0.0.1");
                pb.environment().put("PANAMAX_MASTER_PORT", Integer.toString(port));
                pb.environment().remove("PANAMAX_NODE");
                ranks.add(pb.start());
                logs.add(log);
            }
            for (int r = 0; r < n; r++) {
                Process p = ranks.get(r);
                boolean done = p.waitFor(300, TimeUnit.SECONDS);
                String out = Files.readString(logs.get(r).toPath());
                assertTrue(done, "rank " + r + " did not finish:\n" + out);
                assertEquals(0, p.exitValue(), "rank " + r + ":\n" + out);
                assertTrue(out.contains("OK"), "rank " + r + ":\n" + out);
            }
        } finally {
            for (Process p : ranks) {
                p.destroyForcibly();
            }
        }
    }
}
