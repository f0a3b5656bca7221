package dev.panamax.bench.perf;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.GpuBackend;
import dev.panamax.collectives.TransportKind;
import dev.panamax.collectives.LaunchConfig;
import dev.panamax.collectives.Panamax;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

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
 * <p>{@code -a ring,rhd,...} sweeps once per algorithm; {@code --topology} sets the topology on
 * every rank; {@code --print-schedule} and {@code --explain} print what would run (without
 * running it); {@code --calibrate} measures the cost-model parameters; {@code --plot} draws the
 * results.
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

    @Parameters(index = "0", arity = "0..1", paramLabel = "COLLECTIVE",
            description = "allreduce, reducescatter, allgather, broadcast or reduce (optional with --calibrate)")
    String collective;

    @Option(names = {"-np", "--nranks"}, paramLabel = "N", description = "number of ranks (default: ${DEFAULT-VALUE})", defaultValue = "2")
    int ranks;

    @Option(names = {"-t", "--transport"}, paramLabel = "T", defaultValue = "shm",
            description = "local (threads in this JVM), shm (local processes over shared memory), tcp (local processes over TCP), verbs (local processes over RDMA, needs an RDMA device), "
                    + "auto (shared memory to same-node peers, TCP to the others; see PANAMAX_NODE), "
                    + "gpu (device memory, own stages over CUDA IPC) or nccl (device memory, NCCL); default: ${DEFAULT-VALUE}")
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

    @Option(names = {"-a", "--algorithm"}, paramLabel = "ALG[,ALG...]", defaultValue = "auto", split = ",",
            description = "algorithms to sweep, one after the other: ring, rhd, butterfly, reduce-bcast, two-level, mdring, blueconnect, "
                    + "direct, ... or auto (the planner's choice per size) (default: ${DEFAULT-VALUE})")
    List<String> algorithms;

    @Option(names = "--topology", paramLabel = "SPEC",
            description = "topology every rank sets before measuring, e.g. 2x2 or 2x2:bw=5G,50M:alpha=5us,100us (default: the communicator's own)")
    String topology;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "60",
            description = "timeout of every wait inside a collective and of the connection, on every rank (default: ${DEFAULT-VALUE})")
    double timeoutSeconds;

    @Option(names = "--print-schedule", paramLabel = "first|all", arity = "0..1", fallbackValue = "first",
            description = "print the schedule of each algorithm at the first size (or at all sizes) and exit without measuring")
    String printSchedule;

    @Option(names = "--print-schedule-rank", paramLabel = "R", defaultValue = "0", description = "the rank whose schedules --print-schedule prints (default: ${DEFAULT-VALUE})")
    int printScheduleRank;

    @Option(names = "--explain", description = "print the planner's choice for each size of the sweep and exit without measuring")
    boolean explain;

    @Option(names = "--calibrate", description = "measure ping-pong per transport, the ring all-reduce and the contention of concurrent all-reduces, "
            + "fit t = alpha + beta*m and suggest a --topology (sizes 8..64M unless -b/-e are given)")
    boolean calibrate;

    @Option(names = "--plot", paramLabel = "FILE", description = "also draw busbw (or time) against size, one line per algorithm, to FILE (.png or .svg)")
    Path plot;

    @Option(names = "--plot-from", paramLabel = "JSON[,JSON...]", split = ",",
            description = "draw --plot from the rows of earlier --json files (one line per algorithm over all files) and exit")
    List<Path> plotFrom;

    @Option(names = "--plot-metric", paramLabel = "busbw|time", defaultValue = "busbw", description = "what --plot draws (default: ${DEFAULT-VALUE})")
    String plotMetric;

    @Option(names = "--jit-warmup", paramLabel = "N", defaultValue = "20000",
            description = "iterations at a small size before the sweep, for the JIT (default: ${DEFAULT-VALUE})")
    int jitWarmup;

    @Option(names = "--user-buffers", description = "plain Arena buffers instead of the communicator's shared-memory allocator")
    boolean userBuffers;

    @Option(names = "--percentiles", description = "add p50, p99 and max iteration-time columns")
    boolean percentiles;

    @Option(names = "--json", paramLabel = "FILE", description = "also write the results and the environment as JSON to FILE")
    Path json;

    @Option(names = "--jfr", paramLabel = "FILE",
            description = "record a JFR file per rank (FILE.rankR.jfr; with -t local one FILE for all ranks) with the Panamax events "
                    + "dev.panamax.Collective and dev.panamax.Step, written at the end, also when the run fails")
    Path jfr;

    @Option(names = "--jfr-steps", paramLabel = "off|all|DURATION", defaultValue = "all",
            description = "which dev.panamax.Step events --jfr keeps: all, off, or those of stages that took at least DURATION "
                    + "(500us, 2ms) (default: ${DEFAULT-VALUE})")
    String jfrSteps;

    @Option(names = "--launched", description = "join a job described by the environment (PANAMAX_RANK, ...) as one rank; implied when PANAMAX_RANK is set")
    boolean launched;

    @Spec
    CommandSpec spec;

    private PerfConfig config;
    private java.time.Duration jfrStepThreshold;
    private TransportKind transportKind;
    /** The backend of {@code -t gpu} / {@code -t nccl}; null for the host transports. */
    private GpuBackend backend;
    private Plot.Metric metric;
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
        if (collective == null && !calibrate && plotFrom == null) {
            throw new IllegalArgumentException("missing COLLECTIVE (allreduce, reducescatter, allgather, broadcast or reduce)");
        }
        Collective c = Collective.parse(collective == null ? "allreduce" : collective);
        if (!List.of("local", "shm", "tcp", "verbs", "auto", "gpu", "nccl").contains(transport.toLowerCase(Locale.ROOT))) {
            throw new IllegalArgumentException("unknown transport '" + transport + "'; known: local, shm, tcp, verbs, auto, gpu, nccl");
        }
        transport = transport.toLowerCase(Locale.ROOT);
        // the device transports' host communicator: shared memory (own stages need every rank on this host), NCCL's also TCP
        transportKind = switch (transport) {
            case "tcp" -> TransportKind.TCP;
            case "verbs" -> TransportKind.VERBS;
            case "auto", "nccl" -> TransportKind.AUTO;
            default -> TransportKind.SHM;
        };
        backend = DeviceTarget.backend(transport);
        if (backend != null) {
            checkDeviceOptions(c);
        }
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
        long max = calibrate && !given("-e") ? 64L << 20 : Sizes.parse(maxBytes);
        maxBytes = Long.toString(max);
        if (max < min) {
            throw new IllegalArgumentException("-e " + maxBytes + " is smaller than -b " + minBytes);
        }
        DataType type = DataType.parse(datatype);
        ReduceOp reduceOp = ReduceOp.parse(op);
        Topology top = null;
        if (topology != null) {
            top = Topology.parse(topology);
            if (top.size() != ranks) {
                throw new IllegalArgumentException("--topology " + topology + " has " + top.size() + " ranks, -np is " + ranks);
            }
        }
        List<Long> sizes = Sizes.sweep(min, max, factor, increment);
        List<String> algs = backend == GpuBackend.NCCL ? List.of("nccl") : checkAlgorithms(c, type, sizes, top);
        if (printScheduleRank < 0 || printScheduleRank >= ranks) {
            throw new IllegalArgumentException("--print-schedule-rank " + printScheduleRank + " is not a rank of " + ranks);
        }
        if (printSchedule != null && !printSchedule.equals("first") && !printSchedule.equals("all")) {
            throw new IllegalArgumentException("--print-schedule takes first or all, not '" + printSchedule + "'");
        }
        jfrStepThreshold = JfrRecording.parseThreshold(jfrSteps);
        metric = Plot.Metric.parse(plotMetric);
        if (plot != null) {
            Plot.checkFile(plot);
        }
        config = new PerfConfig(c, type, reduceOp, root, sizes, iters, warmup, check == 1, userBuffers, jitWarmup, algs, topology);
    }

    /**
     * What {@code -t gpu} and {@code -t nccl} cannot do: reduce (device memory has all-reduce,
     * reduce-scatter, all-gather and broadcast), calibration, user buffers; the own stages run ring and
     * rhd ({@code auto}: ring; broadcast: ring), NCCL its own choice ({@code auto} or {@code nccl}).
     */
    private void checkDeviceOptions(Collective c) {
        if (c == Collective.REDUCE) {
            throw new IllegalArgumentException("-t " + transport + " runs allreduce, reducescatter, allgather and broadcast, not reduce");
        }
        if (calibrate) {
            throw new IllegalArgumentException("--calibrate measures the host transports, not -t " + transport);
        }
        if (userBuffers) {
            throw new IllegalArgumentException("--user-buffers is for the host transports; -t " + transport + " measures device memory");
        }
        List<String> allowed = backend == GpuBackend.NCCL ? List.of(Algorithms.AUTO, "nccl")
                : c == Collective.BROADCAST ? List.of(Algorithms.AUTO, "ring") : List.of(Algorithms.AUTO, "ring", "rhd");
        List<String> mapped = new ArrayList<>();
        for (String a : algorithms == null ? List.of(Algorithms.AUTO) : algorithms) {
            String n = a.trim().toLowerCase(Locale.ROOT);
            if (!allowed.contains(n)) {
                throw new IllegalArgumentException("-t " + transport + " runs " + String.join(" or ", allowed.subList(1, allowed.size()))
                        + " for " + c.cliName() + ", not '" + a.trim() + "'");
            }
            String m = n.equals(Algorithms.AUTO) ? allowed.get(1) : n;
            if (!mapped.contains(m)) {
                mapped.add(m);
            }
        }
        algorithms = mapped;
        if (backend == GpuBackend.NCCL && (printSchedule != null || explain)) {
            throw new IllegalArgumentException("--print-schedule and --explain show Panamax schedules; NCCL has none");
        }
    }

    /**
     * The {@code -a} names, lower case and without duplicates; fails on a name the library does not
     * know for this collective, and on an algorithm that cannot run it on {@code -np} ranks (as far
     * as rank 0 of the largest size tells).
     */
    private List<String> checkAlgorithms(Collective c, DataType type, List<Long> sizes, Topology top) {
        List<String> known = Algorithms.namesFor(c.api());
        List<String> out = new ArrayList<>();
        for (String a : algorithms == null ? List.of(Algorithms.AUTO) : algorithms) {
            String n = a.trim().toLowerCase(Locale.ROOT);
            if (n.isEmpty() || out.contains(n)) {
                continue;
            }
            if (!n.equals(Algorithms.AUTO) && !known.contains(n)) {
                throw new IllegalArgumentException("unknown algorithm '" + a.trim() + "' for " + c.cliName() + "; known: "
                        + String.join(", ", known) + ", " + Algorithms.AUTO);
            }
            out.add(n);
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("-a names no algorithm");
        }
        int ts = type.byteSize();
        long count = c.count(sizes.getLast(), ts, ranks);
        Problem p = new Problem(c.api(), 0, ranks, count, ts, c.rooted() ? root : 0, top != null ? top : Topology.flat(ranks));
        for (String n : out) {
            String why = n.equals(Algorithms.AUTO) ? null : Algorithms.get(n).unsupported(p);
            if (why != null) {
                throw new IllegalArgumentException("algorithm '" + n + "' cannot run " + c.cliName() + " on " + ranks + " ranks: " + why);
            }
        }
        return out;
    }

    /** True when one of the option's names was on the command line. */
    private boolean given(String option) {
        if (spec == null || spec.commandLine() == null || spec.commandLine().getParseResult() == null) {
            return false;
        }
        return spec.commandLine().getParseResult().hasMatchedOption(option);
    }

    PerfConfig config() {
        return config;
    }

    @Override
    public Integer call() throws Exception {
        if (plotFrom != null) {
            return plotFromJson();
        }
        try {
            validate();
        } catch (IllegalArgumentException e) {
            err.println("panamax-perf: " + e.getMessage());
            return EXIT_USAGE;
        }
        boolean joinEnvironment = launched || System.getenv("PANAMAX_RANK") != null;
        if (printSchedule != null || explain) {
            // Nothing is measured: the schedules and the planner's choices need no rank processes.
            // Under a launcher every rank gets here; rank 0 alone prints.
            if (joinEnvironment && !"0".equals(String.valueOf(System.getenv("PANAMAX_RANK")).trim())) {
                return 0;
            }
            boolean ok = true;
            if (explain) {
                PlanPrinter.explain(config, ranks, timeoutNanos(), out);
            }
            if (printSchedule != null) {
                ok = PlanPrinter.printSchedules(config, ranks, printScheduleRank, printSchedule.equals("all"), timeoutNanos(), out);
            }
            return ok ? 0 : EXIT_USAGE;
        }
        if (backend != null) {
            // before any rank starts: without the libraries nothing can run (each rank checks again)
            String missing = DeviceTarget.missingLibraries(transport, backend);
            if (missing != null) {
                err.println("panamax-perf: " + missing);
                return EXIT_FAILED;
            }
        }
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
        JfrRecording recording = jfr == null ? null : JfrRecording.start(jfr, jfrStepThreshold);
        try {
            return runLocal0();
        } finally {
            if (recording != null) {
                recording.close();
                out.println("# jfr: " + recording.file());
                out.flush();
            }
        }
    }

    private int runLocal0() throws InterruptedException {
        List<Communicator> comms = Panamax.local(ranks, timeoutNanos());
        if (!calibrate) {
            printHeader(comms.get(0));
        }
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<List<Row>> results = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int r = 0; r < ranks; r++) {
            results.add(null);
            Communicator comm = comms.get(r);
            int rank = r;
            Thread t = new Thread(() -> {
                try {
                    if (calibrate) {
                        new Calibration(comm, config, rank == 0 ? out : null).run(transport);
                    } else {
                        results.set(rank, new PerfRunner(comm, config).run(rank == 0 ? this::printRow : null));
                    }
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
        if (calibrate) {
            return 0;
        }
        return finish(results.get(0), comms.get(0), new TreeSet<>(List.of(ranks > 1 ? "local" : "self")));
    }

    /** The secret of the job this process launched itself (null: whatever the environment says). */
    private String jobSecret;

    /** One rank of a job launched by someone else (or by {@link #launch}). */
    private int runRank(LaunchConfig lc) {
        JfrRecording recording;
        try {
            recording = jfr == null ? null : JfrRecording.start(JfrRecording.rankFile(jfr, lc.rank()), jfrStepThreshold);
        } catch (IllegalArgumentException e) {
            err.println("panamax-perf: rank " + lc.rank() + ": " + e.getMessage());
            return EXIT_FAILED;
        }
        try {
            return runRank0(lc);
        } finally {
            if (recording != null) {
                recording.close();
                // Ranks other than 0 print on stderr (prefixed with their rank by rank 0), after the table.
                (lc.rank() == 0 ? out : err).println("# jfr: " + recording.file());
                (lc.rank() == 0 ? out : err).flush();
            }
        }
    }

    private int runRank0(LaunchConfig lc) {
        var builder = Panamax.builder().config(lc).transport(transportKind).timeout(timeout());
        if (jobSecret != null) {
            builder.secret(jobSecret);
        }
        try (Communicator comm = builder.connect()) {
            if (calibrate) {
                new Calibration(comm, config, comm.rank() == 0 ? out : null).run(transport);
                return 0;
            }
            DeviceTarget device = backend == null ? null : DeviceTarget.open(comm, config, transport, lc.localRank());
            if (comm.rank() == 0) {
                printHeader(comm);
                if (device != null) {
                    out.println("# device memory: rank 0 on " + device.deviceName() + ", backend " + backend);
                    out.flush();
                }
            }
            // the runner closes the device target (collective) when the sweep ends
            List<Row> rows = new PerfRunner(comm, config, device).run(comm.rank() == 0 ? this::printRow : null);
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
        jobSecret = RankProcesses.jobSecret();
        Map<String, String> env = Map.of("PANAMAX_TIMEOUT_SECONDS", fmt(timeoutSeconds), "PANAMAX_SECRET", jobSecret);
        RankProcesses children = RankProcesses.start(ranks, addr, port, cmd, env, err, (rank, status) -> {
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
                .append(", transport ").append(transport).append(", algorithm ").append(String.join(",", config.algorithms()))
                .append(", type ").append(config.type().canonicalName())
                .append(", op ").append(config.redopName());
        if (c.rooted()) {
            sb.append(", root ").append(config.root());
        }
        sb.append(", buffers ").append(bufferKind());
        if (config.topology() != null) {
            sb.append(", topology ").append(Topology.parse(config.topology()));
        }
        out.println(sb);
        out.printf(Locale.ROOT, "#  minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d validation: %d timeout: %ss%n",
                Sizes.parse(minBytes), Sizes.parse(maxBytes), stepBytes != null ? Sizes.parse(stepBytes) + "(bytes)" : fmt(stepFactor == null ? 2 : stepFactor) + "(factor)",
                warmup, iters, check, fmt(timeoutSeconds));
        out.println("#");
        out.println(Row.header(percentiles));
        out.flush();
    }

    private String lastAlgorithm;

    private void printRow(Row row) {
        if (config.algorithms().size() > 1 && !row.algorithm().equals(lastAlgorithm)) {
            out.println("# -a " + row.algorithm());
        }
        lastAlgorithm = row.algorithm();
        out.println(row.format(percentiles));
        out.flush();
    }

    /** The rows of each algorithm, in the order of {@code -a}. */
    private Map<String, List<Row>> byAlgorithm(List<Row> rows) {
        Map<String, List<Row>> m = new LinkedHashMap<>();
        for (String a : config.algorithms()) {
            m.put(a, new ArrayList<>());
        }
        for (Row r : rows) {
            m.computeIfAbsent(r.algorithm(), k -> new ArrayList<>()).add(r);
        }
        return m;
    }

    private static double avgBusBw(List<Row> rows) {
        return rows.stream().mapToDouble(Row::busBw).average().orElse(0);
    }

    /** {@code --plot-from}: the rows of earlier {@code --json} files, grouped by algorithm, drawn to {@code --plot}. */
    private int plotFromJson() {
        if (plot == null) {
            err.println("panamax-perf: --plot-from needs --plot FILE");
            return EXIT_USAGE;
        }
        Plot.checkFile(plot);
        Map<String, List<Row>> groups = new LinkedHashMap<>();
        List<String> what = new ArrayList<>();
        try {
            ObjectMapper mapper = new ObjectMapper().configure(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);
            for (Path f : plotFrom) {
                com.fasterxml.jackson.databind.JsonNode doc = mapper.readTree(f.toFile());
                what.add(doc.path("collective").asText("?") + " np " + doc.path("environment").path("np").asText("?"));
                for (com.fasterxml.jackson.databind.JsonNode r : doc.path("rows")) {
                    Row row = mapper.treeToValue(r, Row.class);
                    groups.computeIfAbsent(row.algorithm() == null || row.algorithm().isEmpty() ? f.getFileName().toString() : row.algorithm(),
                            k -> new ArrayList<>()).add(row);
                }
            }
            Plot.write(plot, groups, Plot.Metric.parse(plotMetric), String.join(", ", new java.util.LinkedHashSet<>(what)));
        } catch (IOException | RuntimeException e) {
            err.println("panamax-perf: could not draw " + plot + " from " + plotFrom + ": " + describe(e));
            return EXIT_FAILED;
        }
        out.println("# plot: " + plot);
        out.flush();
        return 0;
    }

    private int finish(List<Row> rows, Communicator comm, TreeSet<String> links) {
        long wrong = wrongTotal(rows);
        double avg = rows.stream().mapToDouble(Row::busBw).average().orElse(0);
        if (config.check()) {
            out.printf(Locale.ROOT, "# Out of bounds values : %d %s%n", wrong, wrong == 0 ? "OK" : "FAILED");
        }
        out.printf(Locale.ROOT, "# Avg bus bandwidth : %.4f%n", avg);
        Map<String, List<Row>> groups = byAlgorithm(rows);
        if (groups.size() > 1) {
            for (Map.Entry<String, List<Row>> e : groups.entrySet()) {
                long w = wrongTotal(e.getValue());
                out.printf(Locale.ROOT, "#   %-14s avg bus bandwidth %.4f%s%n", e.getKey(), avgBusBw(e.getValue()),
                        config.check() ? ", out of bounds values " + w : "");
            }
        }
        out.println("#");
        out.flush();
        if (plot != null) {
            try {
                String title = config.collective().cliName() + ", np " + ranks + ", " + transport + ", " + config.type().canonicalName()
                        + (config.topology() != null ? ", topology " + config.topology() : "");
                Plot.write(plot, groups, metric, title);
                out.println("# plot: " + plot);
                out.flush();
            } catch (IOException | RuntimeException e) {
                err.println("panamax-perf: could not draw " + plot + ": " + describe(e));
                return EXIT_FAILED;
            }
        }
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

    private String bufferKind() {
        return backend != null ? "device" : userBuffers ? "user" : "communicator";
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
        env.put("algorithm", config.algorithms());
        if (config.topology() != null) {
            env.put("topology", config.topology());
        }
        env.put("buffers", bufferKind());
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
        Map<String, Double> perAlgorithm = new LinkedHashMap<>();
        byAlgorithm(rows).forEach((a, r) -> perAlgorithm.put(a, avgBusBw(r)));
        doc.put("avgBusBwByAlgorithm", perAlgorithm);
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
