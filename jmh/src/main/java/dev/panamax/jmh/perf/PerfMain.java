package dev.panamax.jmh.perf;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.CommunicatorBuilder.TransportKind;
import dev.panamax.collectives.LaunchConfig;
import dev.panamax.collectives.Panamax;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code panamax-perf}: nccl-tests style bandwidth and latency sweep of one collective.
 *
 * <pre>panamax-perf allreduce -np 4 -t shm -b 8 -e 64M -f 2 -n 20 -w 5 -c 1 -d float32 -o sum</pre>
 *
 * With {@code -t local} the ranks are threads of this JVM. With {@code -t shm} or {@code -t tcp}
 * this process is rank 0 and starts ranks 1..np-1 as child JVMs; a process started with
 * {@code PANAMAX_RANK} in its environment (by those children, or by {@code scripts/panamax-run},
 * torchrun, mpirun) is one rank of such a job instead. Rank 0 prints the table; the other ranks'
 * output comes out prefixed with {@code [rank] }.
 *
 * <p>Exit status: 0 when every check passed, 1 when some element was wrong, 2 for a bad command
 * line, 3 when the run failed (a rank died, a collective timed out).
 */
@Command(name = "panamax-perf", mixinStandardHelpOptions = true, sortOptions = false, usageHelpWidth = 110,
        description = "Measures a Panamax collective over a sweep of sizes, like nccl-tests.",
        footer = {"", "Sizes take K, M, G suffixes (powers of 1024). busbw = algbw * factor: all-reduce 2(n-1)/n,",
                "reduce-scatter and all-gather (n-1)/n, broadcast and reduce 1.",
                "Exit status: 0 ok, 1 wrong results, 2 bad command line, 3 the run failed."})
public final class PerfMain implements Callable<Integer> {
    static final int EXIT_WRONG = 1;
    static final int EXIT_USAGE = 2;
    static final int EXIT_FAILED = 3;

    @Parameters(index = "0", paramLabel = "COLLECTIVE", description = "allreduce, reducescatter, allgather, broadcast or reduce")
    String collective;

    @Option(names = {"-np", "--nranks"}, paramLabel = "N", description = "number of ranks (default: ${DEFAULT-VALUE})", defaultValue = "2")
    int ranks;

    @Option(names = {"-t", "--transport"}, paramLabel = "T", defaultValue = "shm",
            description = "local (threads in this JVM), shm (local processes over shared memory), tcp (local processes over TCP) "
                    + "or auto (shared memory to same-node peers, TCP to the others; see PANAMAX_NODE); default: ${DEFAULT-VALUE}")
    String transport;

    @Option(names = {"-b", "--minbytes"}, paramLabel = "SIZE", defaultValue = "8", description = "smallest size (default: ${DEFAULT-VALUE})")
    String minBytes;

    @Option(names = {"-e", "--maxbytes"}, paramLabel = "SIZE", defaultValue = "32M", description = "largest size (default: ${DEFAULT-VALUE})")
    String maxBytes;

    @Option(names = {"-f", "--stepfactor"}, paramLabel = "F", description = "multiply the size by F each step (default 2 unless -i is given)")
    Double stepFactor;

    @Option(names = {"-i", "--stepbytes"}, paramLabel = "SIZE", description = "add SIZE to the size each step")
    String stepBytes;

    @Option(names = {"-n", "--iters"}, paramLabel = "N", defaultValue = "20", description = "timed iterations per size (default: ${DEFAULT-VALUE})")
    int iters;

    @Option(names = {"-w", "--warmup_iters"}, paramLabel = "N", defaultValue = "5", description = "warm-up iterations per size (default: ${DEFAULT-VALUE})")
    int warmup;

    @Option(names = {"-c", "--check"}, paramLabel = "0|1", defaultValue = "1", description = "check the results (default: ${DEFAULT-VALUE})")
    int check;

    @Option(names = {"-d", "--datatype"}, paramLabel = "TYPE", defaultValue = "float32",
            description = "float32|float, float64|double, float16|half, bfloat16|bf16, int32|int, int64, int8, uint8 (default: ${DEFAULT-VALUE})")
    String datatype;

    @Option(names = {"-o", "--op"}, paramLabel = "OP", defaultValue = "sum", description = "sum, prod, min, max or avg (default: ${DEFAULT-VALUE})")
    String op;

    @Option(names = {"-r", "--root"}, paramLabel = "R", defaultValue = "0", description = "root rank of broadcast and reduce (default: ${DEFAULT-VALUE})")
    int root;

    @Option(names = {"-a", "--algorithm"}, paramLabel = "ALG", defaultValue = "ring", description = "ring or auto (both: ring) (default: ${DEFAULT-VALUE})")
    String algorithm;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "60", description = "timeout of every wait inside a collective and of the connection (default: ${DEFAULT-VALUE})")
    double timeoutSeconds;

    @Option(names = "--jit-warmup", paramLabel = "N", defaultValue = "20000",
            description = "iterations at a small size before the sweep, for the JIT (default: ${DEFAULT-VALUE})")
    int jitWarmup;

    @Option(names = "--user-buffers", description = "plain Arena buffers instead of the communicator's shared-memory allocator")
    boolean userBuffers;

    @Option(names = "--percentiles", description = "add p50, p99 and max iteration-time columns")
    boolean percentiles;

    @Option(names = "--json", paramLabel = "FILE", description = "also write the results and the environment as JSON to FILE")
    Path json;

    @Option(names = "--launched", description = "join a job described by the environment (PANAMAX_RANK, ...) as one rank; implied when PANAMAX_RANK is set")
    boolean launched;

    private PerfConfig config;
    private TransportKind transportKind;
    private final PrintStream out;
    private final PrintStream err;

    PerfMain(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** Runs the command; returns the exit status. */
    static int run(String[] args, PrintStream out, PrintStream err) {
        PerfMain main = new PerfMain(out, err);
        CommandLine cl = new CommandLine(main);
        cl.setOut(new java.io.PrintWriter(out, true));
        cl.setErr(new java.io.PrintWriter(err, true));
        cl.setExecutionExceptionHandler((e, line, parsed) -> {
            err.println("panamax-perf: " + describe(e));
            return EXIT_FAILED;
        });
        cl.setParameterExceptionHandler((e, a) -> {
            err.println("panamax-perf: " + e.getMessage());
            err.println("run 'panamax-perf --help' for the options");
            return EXIT_USAGE;
        });
        main.args = args;
        return cl.execute(args);
    }

    private String[] args;

    /** Checks the options and builds {@link #config}; throws IllegalArgumentException with a readable message. */
    void validate() {
        Collective c = Collective.parse(collective);
        String alg = algorithm.toLowerCase(Locale.ROOT);
        if (!alg.equals("ring") && !alg.equals("auto")) {
            throw new IllegalArgumentException("algorithm '" + algorithm + "' is not available: Panamax runs its collectives as rings; use -a ring (or -a auto)");
        }
        if (!List.of("local", "shm", "tcp", "auto").contains(transport.toLowerCase(Locale.ROOT))) {
            throw new IllegalArgumentException("unknown transport '" + transport + "'; known: local, shm, tcp, auto");
        }
        transport = transport.toLowerCase(Locale.ROOT);
        transportKind = switch (transport) {
            case "tcp" -> TransportKind.TCP;
            case "auto" -> TransportKind.AUTO;
            default -> TransportKind.SHM;
        };
        if (ranks < 1) {
            throw new IllegalArgumentException("-np must be at least 1, got " + ranks);
        }
        if (iters < 1) {
            throw new IllegalArgumentException("-n must be at least 1, got " + iters);
        }
        if (warmup < 0) {
            throw new IllegalArgumentException("-w must not be negative, got " + warmup);
        }
        if (jitWarmup < 0) {
            throw new IllegalArgumentException("--jit-warmup must not be negative, got " + jitWarmup);
        }
        if (check != 0 && check != 1) {
            throw new IllegalArgumentException("-c takes 0 or 1, got " + check);
        }
        if (!(timeoutSeconds > 0)) {
            throw new IllegalArgumentException("--timeout must be positive, got " + timeoutSeconds);
        }
        if (root < 0 || root >= ranks) {
            throw new IllegalArgumentException("-r " + root + " is not a rank of " + ranks);
        }
        if (stepFactor != null && stepBytes != null) {
            throw new IllegalArgumentException("give either -f (step factor) or -i (step bytes), not both");
        }
        double factor = stepBytes != null ? 0 : (stepFactor != null ? stepFactor : 2);
        long increment = stepBytes != null ? Sizes.parse(stepBytes) : 0;
        if (stepBytes == null && !(factor > 1)) {
            throw new IllegalArgumentException("-f must be greater than 1, got " + stepFactor);
        }
        if (stepBytes != null && increment <= 0) {
            throw new IllegalArgumentException("-i must be positive, got " + stepBytes);
        }
        long min = Sizes.parse(minBytes);
        long max = Sizes.parse(maxBytes);
        if (max < min) {
            throw new IllegalArgumentException("-e " + maxBytes + " is smaller than -b " + minBytes);
        }
        DataType type = DataType.parse(datatype);
        ReduceOp reduceOp = ReduceOp.parse(op);
        config = new PerfConfig(c, type, reduceOp, root, Sizes.sweep(min, max, factor, increment), iters, warmup, check == 1, userBuffers, jitWarmup);
    }

    PerfConfig config() {
        return config;
    }

    @Override
    public Integer call() throws Exception {
        try {
            validate();
        } catch (IllegalArgumentException e) {
            err.println("panamax-perf: " + e.getMessage());
            return EXIT_USAGE;
        }
        boolean joinEnvironment = launched || System.getenv("PANAMAX_RANK") != null;
        if (transport.equals("local")) {
            if (joinEnvironment) {
                err.println("panamax-perf: -t local runs every rank in this JVM; it cannot join a launched job (use -t shm or -t tcp)");
                return EXIT_USAGE;
            }
            return runLocal();
        }
        if (joinEnvironment) {
            RankProcesses.exitWithParent();
            LaunchConfig lc = LaunchConfig.fromEnvironment();
            if (lc.worldSize() != ranks && isDefault("-np")) {
                ranks = lc.worldSize();
            } else if (lc.worldSize() != ranks) {
                err.println("panamax-perf: -np " + ranks + " disagrees with the job's world size " + lc.worldSize());
                return EXIT_USAGE;
            }
            return runRank(lc);
        }
        return launch();
    }

    private boolean isDefault(String option) {
        for (String a : args) {
            if (a.equals(option) || a.equals("--nranks") || a.startsWith("--nranks=")) {
                return false;
            }
        }
        return true;
    }

    // ---- the three ways to run --------------------------------------------------------------

    /** -t local: every rank a thread of this JVM. */
    private int runLocal() throws InterruptedException {
        List<Communicator> comms = Panamax.local(ranks, timeoutNanos());
        printHeader(comms.get(0));
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<List<Row>> results = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int r = 0; r < ranks; r++) {
            results.add(null);
            Communicator comm = comms.get(r);
            int rank = r;
            Thread t = new Thread(() -> {
                try {
                    List<Row> rows = new PerfRunner(comm, config).run(rank == 0 ? this::printRow : null);
                    results.set(rank, rows);
                } catch (Throwable e) {
                    if (failure.compareAndSet(null, e)) {
                        // Close every communicator so the other ranks fail now instead of at the timeout.
                        comms.forEach(Communicator::close);
                    }
                }
            }, "rank-" + r);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        comms.forEach(Communicator::close);
        if (failure.get() != null) {
            err.println("panamax-perf: " + describe(failure.get()));
            return EXIT_FAILED;
        }
        return finish(results.get(0), comms.get(0), new TreeSet<>(List.of(ranks > 1 ? "local" : "self")));
    }

    /** One rank of a job launched by someone else (or by {@link #launch}). */
    private int runRank(LaunchConfig lc) {
        try (Communicator comm = Panamax.builder().config(lc).transport(transportKind).timeout(timeout()).connect()) {
            if (comm.rank() == 0) {
                printHeader(comm);
            }
            List<Row> rows = new PerfRunner(comm, config).run(comm.rank() == 0 ? this::printRow : null);
            if (comm.rank() != 0) {
                return wrongTotal(rows) > 0 ? EXIT_WRONG : 0;
            }
            return finish(rows, comm, links(comm));
        } catch (RuntimeException e) {
            String m = describe(e);
            err.println("panamax-perf: " + (m.startsWith("rank ") ? m : "rank " + lc.rank() + ": " + m));
            return EXIT_FAILED;
        }
    }

    /**
     * -t shm|tcp|auto without a launcher: this process is rank 0 and starts the others. The store
     * listens on PANAMAX_MASTER_ADDR when that is set (an address of this process's network
     * namespace), else on 127.0.0.1.
     */
    private int launch() throws InterruptedException {
        String master = System.getenv("PANAMAX_MASTER_ADDR");
        String addr = master == null || master.isBlank() ? "127.0.0.1" : master.trim();
        int port = RankProcesses.freePort(addr);
        List<String> cmd = RankProcesses.javaCommand(PerfMain.class.getName(), null);
        cmd.addAll(Arrays.asList(args));
        cmd.add("--launched");
        RankProcesses children = RankProcesses.start(ranks, addr, port, cmd, Map.of(), err, (rank, status) -> {
            err.println("panamax-perf: rank " + rank + " exited with status " + status + "; stopping the job");
            err.flush();
            // Rank 0 normally notices the dead peer itself and exits with its own message; this is the backstop.
            Thread stopper = new Thread(() -> {
                try {
                    Thread.sleep(5_000);
                } catch (InterruptedException ignored) {
                    return;
                }
                err.println("panamax-perf: rank 0 did not stop by itself after rank " + rank + " failed; exiting");
                err.flush();
                Runtime.getRuntime().halt(EXIT_FAILED);
            }, "panamax-stopper");
            stopper.setDaemon(true);
            stopper.start();
        });
        int status;
        try {
            status = runRank(new LaunchConfig(0, ranks, 0, addr, port));
            if (status == EXIT_FAILED) {
                return status;
            }
            int others = children.waitFor(30_000);
            if (others != 0 && status == 0) {
                err.println("panamax-perf: " + (others < 0 ? "some rank did not exit" : "a rank exited with status " + others));
                status = others < 0 ? EXIT_FAILED : others;
            }
        } finally {
            children.close();
        }
        return status;
    }

    // ---- output -----------------------------------------------------------------------------

    private void printHeader(Communicator comm) {
        Collective c = config.collective();
        StringBuilder sb = new StringBuilder("# panamax-perf ").append(c.cliName()).append(": np ").append(ranks)
                .append(", transport ").append(transport).append(", algorithm ring, type ").append(config.type().canonicalName())
                .append(", op ").append(config.redopName());
        if (c.rooted()) {
            sb.append(", root ").append(config.root());
        }
        sb.append(", buffers ").append(userBuffers ? "user" : "communicator");
        out.println(sb);
        out.printf(Locale.ROOT, "#  minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d validation: %d timeout: %ss%n",
                Sizes.parse(minBytes), Sizes.parse(maxBytes), stepBytes != null ? Sizes.parse(stepBytes) + "(bytes)" : fmt(stepFactor == null ? 2 : stepFactor) + "(factor)",
                warmup, iters, check, fmt(timeoutSeconds));
        out.println("#");
        out.println(Row.header(percentiles));
        out.flush();
    }

    private void printRow(Row row) {
        out.println(row.format(percentiles));
        out.flush();
    }

    private int finish(List<Row> rows, Communicator comm, TreeSet<String> links) {
        long wrong = wrongTotal(rows);
        double avg = rows.stream().mapToDouble(Row::busBw).average().orElse(0);
        if (config.check()) {
            out.printf(Locale.ROOT, "# Out of bounds values : %d %s%n", wrong, wrong == 0 ? "OK" : "FAILED");
        }
        out.printf(Locale.ROOT, "# Avg bus bandwidth : %.4f%n", avg);
        out.println("#");
        out.flush();
        if (json != null) {
            try {
                writeJson(rows, avg, wrong, links);
            } catch (IOException e) {
                err.println("panamax-perf: could not write " + json + ": " + e.getMessage());
                return EXIT_FAILED;
            }
        }
        return wrong > 0 ? EXIT_WRONG : 0;
    }

    private static long wrongTotal(List<Row> rows) {
        return rows.stream().mapToLong(r -> Math.max(0, r.wrong())).sum();
    }

    private static TreeSet<String> links(Communicator comm) {
        TreeSet<String> kinds = new TreeSet<>();
        for (int p = 0; p < comm.size(); p++) {
            kinds.add(comm.transportTo(p));
        }
        if (comm.size() > 1) {
            kinds.remove("self");
        }
        return kinds;
    }

    private void writeJson(List<Row> rows, double avgBusBw, long wrong, TreeSet<String> links) throws IOException {
        Map<String, Object> env = new LinkedHashMap<>();
        env.put("transport", transport);
        env.put("links", links);
        env.put("np", ranks);
        env.put("type", config.type().canonicalName());
        env.put("op", config.redopName());
        if (config.collective().rooted()) {
            env.put("root", config.root());
        }
        env.put("algorithm", "ring");
        env.put("buffers", userBuffers ? "user" : "communicator");
        env.put("timeoutSeconds", timeoutSeconds);
        Map<String, Object> jvm = new LinkedHashMap<>();
        jvm.put("version", System.getProperty("java.runtime.version"));
        jvm.put("vendor", System.getProperty("java.vm.vendor"));
        jvm.put("vm", System.getProperty("java.vm.name"));
        jvm.put("arguments", ManagementFactory.getRuntimeMXBean().getInputArguments());
        env.put("jvm", jvm);
        env.put("host", hostName());
        env.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version") + " " + System.getProperty("os.arch"));
        env.put("cpus", Runtime.getRuntime().availableProcessors());

        Map<String, Object> options = new LinkedHashMap<>();
        options.put("minBytes", Sizes.parse(minBytes));
        options.put("maxBytes", Sizes.parse(maxBytes));
        if (stepBytes != null) {
            options.put("stepBytes", Sizes.parse(stepBytes));
        } else {
            options.put("stepFactor", stepFactor == null ? 2.0 : stepFactor);
        }
        options.put("iters", iters);
        options.put("warmupIters", warmup);
        options.put("check", check == 1);
        options.put("jitWarmup", jitWarmup);

        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("tool", "panamax-perf");
        doc.put("collective", config.collective().cliName());
        doc.put("timestamp", Instant.now().toString());
        doc.put("environment", env);
        doc.put("options", options);
        doc.put("busBwFactor", config.collective().busBwFactor(ranks));
        doc.put("rows", rows);
        doc.put("avgBusBw", avgBusBw);
        doc.put("wrong", config.check() ? wrong : null);
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(json.toFile(), doc);
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "unknown";
        }
    }

    private static String fmt(double d) {
        return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
    }

    private long timeoutNanos() {
        return (long) (timeoutSeconds * 1e9);
    }

    private Duration timeout() {
        return Duration.ofNanos(timeoutNanos());
    }

    private static String describe(Throwable e) {
        String m = e.getMessage();
        return (m == null || m.isBlank()) ? e.toString() : m;
    }
}
