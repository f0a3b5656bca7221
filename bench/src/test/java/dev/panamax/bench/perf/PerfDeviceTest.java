package dev.panamax.bench.perf;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The device transports of panamax-perf ({@code -t gpu}, {@code -t nccl}) as far as they need no
 * GPU: their options, and the message without the CUDA and NCCL libraries.
 */
class PerfDeviceTest {
    private static PerfCommand parse(String... args) {
        PerfCommand m = new PerfCommand(System.out, System.err);
        new CommandLine(m).parseArgs(args);
        m.validate();
        return m;
    }

    private static String refusal(String... args) {
        return assertThrows(IllegalArgumentException.class, () -> parse(args)).getMessage();
    }

    @Test
    void ownStagesRunRingAndRhd() {
        assertEquals(List.of("ring"), parse("allreduce", "-t", "gpu").config().algorithms());
        assertEquals(List.of("ring", "rhd"), parse("allreduce", "-t", "GPU", "-np", "4", "-a", "auto,rhd,ring").config()
                .algorithms());
        assertEquals(List.of("ring"), parse("broadcast", "-t", "gpu", "-a", "auto").config().algorithms());
        String m = refusal("allreduce", "-t", "gpu", "-a", "blueconnect");
        assertTrue(m.contains("-t gpu runs ring or rhd for allreduce, not 'blueconnect'"), m);
        m = refusal("broadcast", "-t", "gpu", "-a", "rhd");
        assertTrue(m.contains("runs ring for broadcast"), m);
        // the host rules still hold: rhd reduce-scatter needs a power of two
        m = refusal("reducescatter", "-t", "gpu", "-np", "3", "-a", "rhd");
        assertTrue(m.contains("power-of-two"), m);
    }

    @Test
    void ncclRunsItsOwnChoice() {
        assertEquals(List.of("nccl"), parse("allgather", "-t", "nccl", "-np", "1").config().algorithms());
        assertEquals(List.of("nccl"), parse("allreduce", "-t", "nccl", "-a", "nccl,auto").config().algorithms());
        String m = refusal("allreduce", "-t", "nccl", "-a", "ring");
        assertTrue(m.contains("-t nccl runs nccl for allreduce, not 'ring'"), m);
        m = refusal("allreduce", "-t", "nccl", "--print-schedule");
        assertTrue(m.contains("NCCL has none"), m);
    }

    @Test
    void whatDeviceMemoryCannotDoIsRefused() {
        assertTrue(refusal("reduce", "-t", "nccl").contains("not reduce"));
        assertTrue(refusal("reduce", "-t", "gpu").contains("not reduce"));
        assertTrue(refusal("allreduce", "-t", "gpu", "--user-buffers")
                .contains("--user-buffers is for the host transports"));
        assertTrue(refusal("allreduce", "-t", "nccl", "--calibrate")
                .contains("--calibrate measures the host transports"));
        assertTrue(refusal("allreduce", "-t", "cuda").contains("known: local, shm, tcp, verbs, auto, gpu, nccl"));
    }

    /** In a JVM whose CUDA and NCCL settings point at missing files: exit status 3 and one line naming both libraries.
     * */
    @Test
    void withoutTheLibrariesItSaysWhichAreMissing() throws Exception {
        for (String t : List.of("nccl", "gpu")) {
            List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                    .toString(),
                    "--enable-native-access=ALL-UNNAMED",
                    "-Dpanamax.library.cuda=/nonexistent/panamax/libcuda.so.1",
                    "-Dpanamax.library.nccl=/nonexistent/panamax/libnccl.so.2",
                    "-cp", System.getProperty("java.class.path"), PerfMain.class.getName(),
                    "allreduce", "-t", t, "-np", "1", "-e", "1K"));
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), "panamax-perf -t " + t + " did not exit");
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(3, p.exitValue(), out);
            boolean nccl = t.equals("nccl");
            assertTrue(out.startsWith("panamax-perf: -t " + t + " needs the CUDA driver" + (nccl ? " and NCCL" : "")
                    + ": libcuda.so.1: library not available (/nonexistent/panamax/libcuda.so.1"), out);
            assertEquals(nccl, out.contains("; libnccl.so.2: library not available (/nonexistent/panamax/libnccl.so.2"),
                    out);
            assertEquals(nccl, out.contains("PANAMAX_LIBRARY_NCCL=<site-packages>/nvidia/nccl/lib/libnccl.so.2"), out);
            assertFalse(out.contains("\tat "), "a stack trace: " + out);
            assertEquals(1, out.strip().lines().count(), out);
        }
    }
}
