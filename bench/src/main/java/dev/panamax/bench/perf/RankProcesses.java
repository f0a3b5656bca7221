package dev.panamax.bench.perf;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.security.SecureRandom;
import java.util.HexFormat;

/**
 * Ranks 1..n-1 of a local job as child JVMs of the process that is rank 0, each with
 * {@code PANAMAX_RANK/PANAMAX_WORLD_SIZE/PANAMAX_LOCAL_RANK/PANAMAX_MASTER_ADDR/PANAMAX_MASTER_PORT}
 * set. Their output is copied to {@code out} line by line with a {@code [rank] } prefix. A child
 * that exits with a non-zero status is reported to the failure handler; {@link #close()} stops
 * every child that is still running, and a shutdown hook does the same if this JVM exits first.
 * Children watch this process through {@code PANAMAX_PARENT_PID} ({@link #exitWithParent()}), so
 * they go away even when it is killed outright.
 *
 * <p>{@code PANAMAX_RANK_WRAPPER}, when set in this process's environment, is a command prefix put
 * in front of every child's command line: split at whitespace (no quoting), with {@code {rank}} in
 * each word replaced by the child's rank. For example {@code ip netns exec pmx-r{rank}} starts
 * each rank in its own network namespace. The wrapper must end by exec'ing the command it is given
 * (as {@code ip netns exec}, {@code env} and {@code exec} in a script do), so that the child
 * process is the rank's JVM and stopping it stops the rank.
 */
public final class RankProcesses implements AutoCloseable {
    /** Environment variable naming the launching process; children exit when it is gone. */
    public static final String PARENT_PID = "PANAMAX_PARENT_PID";
    /** Environment variable holding a command prefix for every child; {@code {rank}} becomes the rank. */
    public static final String RANK_WRAPPER = "PANAMAX_RANK_WRAPPER";

    private final List<Process> children = new ArrayList<>();
    private final Thread hook;
    private volatile boolean closing;

    private RankProcesses() {
        hook = new Thread(this::destroyAll, "panamax-rank-reaper");
        Runtime.getRuntime().addShutdownHook(hook);
    }

    /**
     * Starts ranks 1..ranks-1 running {@code command}. {@code onFailure} is called (once per
     * child, on a background thread) with the rank and exit status of each child that fails.
     */
    public static RankProcesses start(int ranks, String masterAddr, int masterPort, List<String> command, Map<String,
            String> env,
                                      PrintStream out, FailureHandler onFailure) {
        RankProcesses group = new RankProcesses();
        try {
            for (int r = 1; r < ranks; r++) {
                ProcessBuilder pb = new ProcessBuilder(wrap(System.getenv(RANK_WRAPPER), r, command))
                        .redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.PIPE);
                Map<String, String> e = pb.environment();
                e.putAll(env);
                e.put("PANAMAX_RANK", Integer.toString(r));
                e.put("PANAMAX_WORLD_SIZE", Integer.toString(ranks));
                e.put("PANAMAX_LOCAL_RANK", Integer.toString(r));
                e.put("PANAMAX_MASTER_ADDR", masterAddr);
                e.put("PANAMAX_MASTER_PORT", Integer.toString(masterPort));
                e.put(PARENT_PID, Long.toString(ProcessHandle.current().pid()));
                Process p = pb.start();
                p.getOutputStream().close();
                group.children.add(p);
                int rank = r;
                Thread pump = new Thread(() -> pump(p, rank, out), "panamax-rank-" + r + "-output");
                pump.setDaemon(true);
                pump.start();
                p.onExit().thenAccept(done -> {
                    int status = done.exitValue();
                    if (status != 0 && !group.closing && onFailure != null) {
                        onFailure.failed(rank, status);
                    }
                });
            }
        } catch (IOException e) {
            group.close();
            throw new UncheckedIOException("could not start the rank processes: " + e.getMessage(), e);
        }
        return group;
    }

    /**
     * The secret for a job this process launches: {@code PANAMAX_SECRET} (or property
     * {@code panamax.secret}) when set, else 32 random hex digits. Pass it to the children in
     * their environment and to this process's own rank.
     */
    public static String jobSecret() {
        String s = System.getProperty("panamax.secret", System.getenv("PANAMAX_SECRET"));
        if (s != null && !s.isEmpty()) {
            return s;
        }
        byte[] b = new byte[16];
        new SecureRandom().nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    /** {@code command} behind the words of {@code wrapper} (null or blank: none), {@code {rank}} replaced by {@code
     * rank}. */
    static List<String> wrap(String wrapper, int rank, List<String> command) {
        List<String> cmd = new ArrayList<>();
        if (wrapper != null && !wrapper.isBlank()) {
            for (String word : wrapper.trim().split("\\s+")) {
                cmd.add(word.replace("{rank}", Integer.toString(rank)));
            }
        }
        cmd.addAll(command);
        return cmd;
    }

    /** Called when a child rank exits with a non-zero status. */
    @FunctionalInterface
    public interface FailureHandler {
        void failed(int rank, int status);
    }

    private static void pump(Process p, int rank, PrintStream out) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.startsWith("WARNING: Using incubator modules")) {
                    continue; // every rank would print it; the launching JVM already has
                }
                synchronized (out) {
                    out.println("[" + rank + "] " + line);
                    out.flush();
                }
            }
        } catch (IOException ignored) {
            // the child is gone
        }
    }

    /**
     * Waits up to {@code timeoutMillis} for every child to exit; returns the first non-zero exit
     * status (0 when all succeeded), or -1 when some child was still running (it is then stopped).
     */
    public int waitFor(long timeoutMillis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        int status = 0;
        for (Process p : children) {
            long left = deadline - System.nanoTime();
            if (!p.waitFor(Math.max(0, left), TimeUnit.NANOSECONDS)) {
                close();
                return -1;
            }
            if (status == 0) {
                status = p.exitValue();
            }
        }
        return status;
    }

    /** Stops every child still running (TERM, then KILL after a second). Idempotent. */
    @Override
    public void close() {
        destroyAll();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException ignored) {
            // already shutting down: the hook runs anyway
        }
    }

    private void destroyAll() {
        closing = true;
        for (Process p : children) {
            p.descendants().forEach(ProcessHandle::destroy);
            p.destroy();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
        for (Process p : children) {
            try {
                if (!p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    p.descendants().forEach(ProcessHandle::destroyForcibly);
                    p.destroyForcibly();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                p.destroyForcibly();
            }
        }
    }

    /** A free TCP port on the loopback interface (another program could take it before it is used). */
    public static int freePort(String address) {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName(address))) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("no free port on " + address + ": " + e.getMessage(), e);
        }
    }

    /**
     * The command that starts {@code mainClass} in a JVM like this one: the same {@code java}
     * binary and class path, this JVM's arguments (minus debugger agents) or {@code jvmArgs} when given.
     */
    public static List<String> javaCommand(String mainClass, List<String> jvmArgs) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        if (jvmArgs != null) {
            cmd.addAll(jvmArgs);
        } else {
            for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
                if (!a.startsWith("-agentlib:jdwp") && !a.startsWith("-Xrunjdwp")) {
                    cmd.add(a);
                }
            }
        }
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(mainClass);
        return cmd;
    }

    /** In a child: halts this JVM as soon as the process named by {@code PANAMAX_PARENT_PID} is gone. */
    public static void exitWithParent() {
        String pid = System.getenv(PARENT_PID);
        if (pid == null || pid.isBlank()) {
            return;
        }
        Consumer<Object> halt = ignored -> {
            System.err.println("the launching process " + pid + " is gone; exiting");
            System.err.flush();
            Runtime.getRuntime().halt(4);
        };
        ProcessHandle.of(Long.parseLong(pid.trim())).ifPresentOrElse(
                parent -> parent.onExit().thenAccept(halt::accept),
                () -> halt.accept(null));
    }
}
