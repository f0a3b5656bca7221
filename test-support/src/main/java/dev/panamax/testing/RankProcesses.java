package dev.panamax.testing;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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
        runExpectingOk(main, n, environment, r -> List.of(), timeout, args);
    }

    /** As above, each rank also printing every line of {@code wantedLines.apply(rank)} (whole lines). */
    public static void runExpectingOk(Class<?> main, int n, IntFunction<Map<String, String>> environment,
                                      IntFunction<List<String>> wantedLines, Duration timeout, String... args)
            throws IOException, InterruptedException {
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
                List<String> wanted = wantedLines.apply(r);
                ok &= done && p.exitValue() == 0 && out.contains("OK") && out.lines().toList().containsAll(wanted);
                report.append("rank ").append(r).append(done ? " exited with " + p.exitValue() : " did not finish")
                        .append(wanted.isEmpty() ? "" : " (wanted " + wanted + ")").append(":\n").append(out)
                        .append('\n');
            }
            assertTrue(ok, report::toString);
        } finally {
            for (Process p : ranks) {
                p.destroyForcibly();
            }
        }
    }

    /**
     * A started process whose output lines are collected as they come (standard error merged by the builder);
     * {@code output} completes with them all once the process has closed its output.
     */
    public record Running(Process process, List<String> lines, CompletableFuture<List<String>> output) {
        /** The first line so far that starts with {@code prefix}, or null. */
        public String line(String prefix) {
            return lines.stream().filter(l -> l.startsWith(prefix)).findFirst().orElse(null);
        }

        /** Waits up to {@code timeout} for a line that starts with {@code prefix}; true when one came. */
        public boolean awaitLine(String prefix, Duration timeout) throws InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (line(prefix) == null && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            return line(prefix) != null;
        }

        /**
         * Waits up to {@code timeout} for the process to exit (asserting that it does) and for its last lines, and
         * returns its status.
         */
        public int awaitExit(Duration timeout) throws InterruptedException {
            assertTrue(process.waitFor(timeout.toNanos(), TimeUnit.NANOSECONDS), "did not exit: " + lines);
            allOutput();
            return process.exitValue();
        }

        /** Every line of an exited process (waiting up to 10 s for the last ones to be read). */
        public List<String> allOutput() throws InterruptedException {
            try {
                return output.get(10, TimeUnit.SECONDS);
            } catch (ExecutionException | TimeoutException e) {
                throw new AssertionError("the output of pid " + process.pid() + " did not end: " + lines, e);
            }
        }
    }

    /** Starts {@code pb} and a daemon thread that collects its output lines. */
    public static Running start(ProcessBuilder pb) throws IOException {
        Process p = pb.start();
        List<String> lines = new CopyOnWriteArrayList<>();
        CompletableFuture<List<String>> output = new CompletableFuture<>();
        // A thread of its own per process: the common pool may have a single thread on a small machine.
        Thread.ofPlatform().daemon().name("output of pid " + p.pid()).start(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(),
                    StandardCharsets.UTF_8))) {
                for (String l = in.readLine(); l != null; l = in.readLine()) {
                    lines.add(l);
                }
            } catch (IOException e) {
                lines.add("(output unreadable: " + e + ")");
            }
            output.complete(lines);
        });
        return new Running(p, lines, output);
    }

    private static String read(File f) {
        try {
            return Files.readString(f.toPath());
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }
}
