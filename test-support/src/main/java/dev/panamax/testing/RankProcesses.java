package dev.panamax.testing;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Jobs of rank processes on this host: child JVMs ({@link ChildJvm#command}) started as the launcher starts
 * them, with the launch variables {@code PANAMAX_RANK}, {@code PANAMAX_WORLD_SIZE}, {@code PANAMAX_MASTER_ADDR}
 * (127.0.0.1) and {@code PANAMAX_MASTER_PORT}, and the Vector API module for the reduction kernels.
 */
public final class RankProcesses {
    /** The JVM options of a rank process, beyond native access: the reduction kernels use the Vector API. */
    public static final List<String> JVM_OPTIONS = List.of("--add-modules", "jdk.incubator.vector");

    private RankProcesses() {
    }

    /**
     * A builder for rank {@code rank} of a job of {@code worldSize} processes running {@code main} with
     * {@code args}: the launch variables set, {@code PANAMAX_NODE} removed (every rank on this host), standard
     * error merged into standard output. The caller redirects the output and starts it.
     */
    public static ProcessBuilder builder(Class<?> main, int rank, int worldSize, int masterPort, List<String> args) {
        ProcessBuilder pb = new ProcessBuilder(ChildJvm.command(main, JVM_OPTIONS, args)).redirectErrorStream(true);
        Map<String, String> env = pb.environment();
        env.put("PANAMAX_RANK", Integer.toString(rank));
        env.put("PANAMAX_WORLD_SIZE", Integer.toString(worldSize));
        env.put("PANAMAX_MASTER_ADDR", "127.0.0.1");
        env.put("PANAMAX_MASTER_PORT", Integer.toString(masterPort));
        env.remove("PANAMAX_NODE");
        return pb;
    }

    /**
     * Runs {@code main} as {@code n} rank processes of one job ({@link #builder}, on a {@linkplain Ports#freePort
     * free port}, with {@code environment.apply(rank)} added, output to a log file each) and asserts that each
     * finishes within {@code timeout}, exits 0 and prints OK. A failure shows every rank's exit status and
     * output: the rank that reports is often not the one that failed.
     */
    public static void runExpectingOk(Class<?> main, int n, IntFunction<Map<String, String>> environment,
                                      Duration timeout, String... args) throws IOException, InterruptedException {
        int port = Ports.freePort();
        List<Process> ranks = new ArrayList<>();
        List<File> logs = new ArrayList<>();
        try {
            for (int r = 0; r < n; r++) {
                File log = Files.createTempFile("panamax-" + main.getSimpleName() + "-rank" + r, ".log").toFile();
                log.deleteOnExit();
                ProcessBuilder pb = builder(main, r, n, port, List.of(args)).redirectOutput(log);
                pb.environment().putAll(environment.apply(r));
                ranks.add(pb.start());
                logs.add(log);
            }
            long deadline = System.nanoTime() + timeout.toNanos();
            boolean ok = true;
            StringBuilder report = new StringBuilder();
            for (int r = 0; r < n; r++) {
                Process p = ranks.get(r);
                boolean done = p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                String out = read(logs.get(r));
                ok &= done && p.exitValue() == 0 && out.contains("OK");
                report.append("rank ").append(r).append(done ? " exited with " + p.exitValue() : " did not finish")
                        .append(":\n").append(out).append('\n');
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
