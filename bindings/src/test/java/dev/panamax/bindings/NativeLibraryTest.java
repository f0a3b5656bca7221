package dev.panamax.bindings;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class NativeLibraryTest {

    @Test
    void namesAndSettings() {
        assertEquals("libibverbs.so.1", NativeLibrary.IBVERBS.soname());
        assertEquals("libcuda.so.1", NativeLibrary.CUDA.soname());
        assertEquals("libnccl.so.2", NativeLibrary.NCCL.soname());
        assertEquals("panamax.library.nccl", NativeLibrary.NCCL.propertyName());
        assertEquals("PANAMAX_LIBRARY_NCCL", NativeLibrary.NCCL.environmentVariable());
        assertEquals("PANAMAX_LIBRARY_IBVERBS", NativeLibrary.IBVERBS.environmentVariable());
    }

    @Test
    void probesAreConsistent() {
        for (NativeLibrary lib : NativeLibrary.values()) {
            String cause = lib.unavailabilityCause();
            if (lib.isAvailable()) {
                assertNull(cause, lib + " is available but has a cause");
            } else {
                assertNotNull(cause, lib + " is unavailable without a cause");
                assertTrue(cause.contains(lib.soname()), cause);
                assertTrue(cause.contains("library not available"), cause);
                System.out.println(lib + ": " + cause);
            }
        }
    }

    @Test
    void explicitPathThatDoesNotExistIsReported() throws Exception {
        Map<String, String> out = probe(List.of("-Dpanamax.library.nccl=/nonexistent/dir/libnccl.so.2"), Map.of(),
                "NCCL", "ncclGetVersion");
        assertEquals("false", out.get("available"));
        assertTrue(out.get("cause").contains("/nonexistent/dir/libnccl.so.2"), out.toString());
        assertTrue(out.get("cause").contains("panamax.library.nccl"), out.toString());
        assertTrue(out.get("error").contains("ncclGetVersion") && out.get("error").contains("libnccl.so.2"),
                out.toString());
    }

    @Test
    void explicitPathFromEnvironmentIsLoaded() throws Exception {
        Path lib = Path.of("/usr/lib/x86_64-linux-gnu/libibverbs.so.1");
        assumeTrue(Files.exists(lib), lib + " not installed");
        // a file outside any configured name: the environment variable points at it
        Map<String, String> out = probe(List.of(), Map.of("PANAMAX_LIBRARY_IBVERBS", lib.toRealPath().toString()),
                "IBVERBS", "ibv_get_device_list");
        assertEquals("true", out.get("available"), out.toString());
        assertEquals("true", out.get("symbol"), out.toString());
        Map<String, String> missing = probe(List.of(), Map.of("PANAMAX_LIBRARY_IBVERBS", lib.toRealPath().toString()),
                "IBVERBS", "no_such_function");
        assertTrue(missing.get("error").contains("no_such_function")
                && missing.get("error").contains("libibverbs.so.1"),
                missing.toString());
    }

    private static Map<String, String> probe(List<String> jvmArgs, Map<String, String> env, String... args)
            throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.addAll(jvmArgs);
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), LibraryProbeMain.class.getName()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().remove("PANAMAX_LIBRARY_NCCL");
        pb.environment().remove("PANAMAX_LIBRARY_IBVERBS");
        pb.environment().putAll(env);
        Process p = pb.start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), text);
        Map<String, String> result = new HashMap<>();
        for (String line : text.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) result.put(line.substring(0, eq), line.substring(eq + 1));
        }
        return result;
    }
}
