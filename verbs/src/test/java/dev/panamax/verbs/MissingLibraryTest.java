package dev.panamax.verbs;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Without libibverbs the API says so, naming the library and the setting that would point at it. */
class MissingLibraryTest {

    @Test
    void missingLibraryIsReportedWithTheLibraryAndTheSetting() throws Exception {
        String missing = "/nonexistent/panamax/libibverbs.so.1";
        String out = runJvm("-Dpanamax.library.ibverbs=" + missing);
        String cause = "libibverbs.so.1: library not available (" + missing
                + ", set by panamax.library.ibverbs or PANAMAX_LIBRARY_IBVERBS, does not exist)";
        assertTrue(out.contains("available=false\n"), out);
        assertTrue(out.contains("cause=" + cause + "\n"), out);
        assertTrue(out.contains("devices=RDMA verbs are not available: " + cause + "\n"), out);
        assertTrue(out.contains("open=RDMA verbs are not available: " + cause + "\n"), out);
    }

    private static String runJvm(String property) throws IOException, InterruptedException {
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", property, "-cp", System.getProperty("java.class.path"),
                MissingLibraryMain.class.getName());
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().remove("PANAMAX_LIBRARY_IBVERBS");
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("probe JVM timed out: " + out);
        }
        assertEquals(0, p.exitValue(), out);
        return out;
    }
}
