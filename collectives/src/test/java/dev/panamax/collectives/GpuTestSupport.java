package dev.panamax.collectives;

import dev.panamax.cuda.Cuda;
import dev.panamax.cuda.Nccl;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.IntUnaryOperator;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.abort;

/**
 * For the collectives tests tagged "gpu": skips, with the reason, without libcuda, the device (or NCCL) a
 * test needs. With PANAMAX_REQUIRE_GPU=1 (PANAMAX_REQUIRE_NCCL=1 for NCCL) the missing library or device
 * fails the test instead, so that a run on a GPU machine cannot pass by skipping; a test that needs more
 * devices than the machine has always skips.
 */
public final class GpuTestSupport {
    /** The device the tests use: PANAMAX_CUDA_DEVICE, default 0. */
    public static final int ORDINAL = Integer.parseInt(System.getenv().getOrDefault("PANAMAX_CUDA_DEVICE", "0"));

    private GpuTestSupport() {
    }

    /** Skips (or fails, see above) unless CUDA, device {@link #ORDINAL}, NCCL when {@code nccl}, and {@code devices} devices are here. */
    public static void requireGpu(boolean nccl, int devices) {
        String reason = null;
        if (!Cuda.isAvailable()) {
            reason = "no CUDA: " + Cuda.unavailabilityCause().getMessage();
        } else if (Cuda.deviceCount() <= ORDINAL) {
            reason = "no CUDA device " + ORDINAL + " (" + Cuda.deviceCount() + " visible)";
        }
        if (reason != null) {
            if ("1".equals(System.getenv("PANAMAX_REQUIRE_GPU"))) {
                fail("PANAMAX_REQUIRE_GPU=1 but " + reason);
            }
            abort(reason);
        }
        if (nccl && !Nccl.isAvailable()) {
            reason = "no NCCL: " + Nccl.unavailabilityCause().getMessage();
            if ("1".equals(System.getenv("PANAMAX_REQUIRE_NCCL"))) {
                fail("PANAMAX_REQUIRE_NCCL=1 but " + reason);
            }
            abort(reason);
        }
        if (Cuda.deviceCount() < devices) {
            abort("needs " + devices + " CUDA devices, " + Cuda.deviceCount() + " visible");
        }
    }

    /**
     * Runs {@code main} as {@code n} rank processes of one job (the launch variables set, rank r on
     * device {@code device(r)}, arguments {@code args}, output to a log file each) and asserts that each
     * finishes within 300 s, exits 0 and prints OK. A failure shows every rank's exit status and output:
     * the rank that reports is often not the one that failed.
     */
    public static void runRankProcesses(Class<?> main, int n, IntUnaryOperator device, String... args) throws Exception {
        int port = Ranks.freePort();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<Process> ranks = new ArrayList<>();
        List<File> logs = new ArrayList<>();
        try {
            for (int r = 0; r < n; r++) {
                File log = Files.createTempFile("panamax-" + main.getSimpleName() + "-rank" + r, ".log").toFile();
                log.deleteOnExit();
                List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "--add-modules", "jdk.incubator.vector",
                        "-cp", System.getProperty("java.class.path"), main.getName()));
                cmd.addAll(List.of(args));
                ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log);
                pb.environment().put("PANAMAX_RANK", Integer.toString(r));
                pb.environment().put("PANAMAX_WORLD_SIZE", Integer.toString(n));
                pb.environment().put("PANAMAX_MASTER_ADDR", "127.0.0.1");
                pb.environment().put("PANAMAX_MASTER_PORT", Integer.toString(port));
                pb.environment().put("PANAMAX_CUDA_DEVICE", Integer.toString(device.applyAsInt(r)));
                pb.environment().remove("PANAMAX_NODE");
                ranks.add(pb.start());
                logs.add(log);
            }
            boolean ok = true;
            StringBuilder report = new StringBuilder();
            for (int r = 0; r < n; r++) {
                Process p = ranks.get(r);
                boolean done = p.waitFor(300, TimeUnit.SECONDS);
                String out = read(logs.get(r));
                ok &= done && p.exitValue() == 0 && out.contains("OK");
                report.append("rank ").append(r).append(done ? " exited with " + p.exitValue() : " did not finish").append(":\n")
                        .append(out).append('\n');
            }
            assertTrue(ok, report::toString);
        } finally {
            for (Process p : ranks) {
                p.destroyForcibly();
            }
        }
    }

    private static String read(File f) {
        try {
            return Files.readString(f.toPath());
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }
}
