package dev.panamax.bench.perf;

import dev.panamax.collectives.GpuBackend;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.TransportKind;
import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.memory.Conversions;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * The {@code panamax-perf} command line: its options (picocli), their validation into a {@link PerfConfig},
 * and the choice of what to do: draw earlier results ({@code --plot-from}), print schedules or the planner's
 * choices ({@code --print-schedule}, {@code --explain}), or measure ({@link PerfLauncher}, which runs the
 * ranks, with {@link PerfReport} for the output). {@link PerfMain} is the entry point.
 */
@Command(name = "panamax-perf", mixinStandardHelpOptions = true, sortOptions = false, usageHelpWidth = 110,
        description = "Measures a Panamax collective over a sweep of sizes, like nccl-tests.",
        footer = {"", "Sizes take K, M, G suffixes (powers of 1024). busbw = algbw * factor: all-reduce 2(n-1)/n,",
                "reduce-scatter and all-gather (n-1)/n, broadcast and reduce 1.",
                "Exit status: 0 ok, 1 wrong results, 2 bad command line, 3 the run failed."})
public final class PerfCommand implements Callable<Integer> {
    @Parameters(index = "0", arity = "0..1", paramLabel = "COLLECTIVE",
            description = "allreduce, reducescatter, allgather, broadcast or reduce (optional with --calibrate)")
    String collective;

    @Option(names = {"-np", "--nranks"}, paramLabel = "N", description = "number of ranks (default: ${DEFAULT-VALUE})",
            defaultValue = "2")
    int ranks;

    @Option(names = {"-t", "--transport"}, paramLabel = "T", defaultValue = "shm",
            description =
                    "local (threads in this JVM), shm (local processes over shared memory), tcp (local processes over "
                            + "TCP), verbs (local processes over RDMA, needs an RDMA device), "
                    + "auto (shared memory to same-node peers, TCP to the others; see PANAMAX_NODE), "
                    + "gpu (device memory, own stages over CUDA IPC) or nccl (device memory, NCCL); default: "
                    + "${DEFAULT-VALUE}")
    String transport;

    @Option(names = {"-b", "--minbytes"}, paramLabel = "SIZE", defaultValue = "8",
            description = "smallest size (default: ${DEFAULT-VALUE})")
    String minBytes;

    @Option(names = {"-e", "--maxbytes"}, paramLabel = "SIZE", defaultValue = "32M",
            description = "largest size (default: ${DEFAULT-VALUE})")
    String maxBytes;

    @Option(names = {"-f", "--stepfactor"}, paramLabel = "F",
            description = "multiply the size by F each step (default 2 unless -i is given)")
    Double stepFactor;

    @Option(names = {"-i", "--stepbytes"}, paramLabel = "SIZE", description = "add SIZE to the size each step")
    String stepBytes;

    @Option(names = {"-n", "--iters"}, paramLabel = "N", defaultValue = "20",
            description = "timed iterations per size (default: ${DEFAULT-VALUE})")
    int iters;

    @Option(names = {"-w", "--warmup_iters"}, paramLabel = "N", defaultValue = "5",
            description = "warm-up iterations per size (default: ${DEFAULT-VALUE})")
    int warmup;

    @Option(names = {"-c", "--check"}, paramLabel = "0|1", defaultValue = "1",
            description = "check the results (default: ${DEFAULT-VALUE})")
    int check;

    @Option(names = {"-d", "--datatype"}, paramLabel = "TYPE", defaultValue = "float32",
            description =
                    "float32|float, float64|double, float16|half, bfloat16|bf16, int32|int, int64, int8, uint8 "
                            + "(default: ${DEFAULT-VALUE})")
    String datatype;

    @Option(names = {"--wire"}, paramLabel = "TYPE",
            description = "all-reduce only: float32 or float64 data sent on the wire as bfloat16 or float16, partial "
                    + "results kept in the data type (default: the data type)")
    String wire;

    @Option(names = {"-o", "--op"}, paramLabel = "OP", defaultValue = "sum",
            description = "sum, prod, min, max, avg, or premulsum (all-reduce: each input times 1/ranks, then "
                    + "summed) (default: ${DEFAULT-VALUE})")
    String op;

    @Option(names = {"-r", "--root"}, paramLabel = "R", defaultValue = "0",
            description = "root rank of broadcast and reduce (default: ${DEFAULT-VALUE})")
    int root;

    @Option(names = {"-a", "--algorithm"}, paramLabel = "ALG[,ALG...]", defaultValue = "auto", split = ",",
            description =
                    "algorithms to sweep, one after the other: ring, rhd, butterfly, reduce-bcast, two-level, mdring, "
                            + "blueconnect, "
                    + "direct, ... or auto (the planner's choice per size) (default: ${DEFAULT-VALUE})")
    List<String> algorithms;

    @Option(names = "--topology", paramLabel = "SPEC",
            description =
                    "topology every rank sets before measuring, e.g. 2x2 or 2x2:bw=5G,50M:alpha=5us,100us (default: "
                            + "the communicator's own)")
    String topology;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "60",
            description =
                    "timeout of every wait inside a collective and of the connection, on every rank (default: "
                            + "${DEFAULT-VALUE})")
    double timeoutSeconds;

    @Option(names = "--print-schedule", paramLabel = "first|all", arity = "0..1", fallbackValue = "first",
            description =
                    "print the schedule of each algorithm at the first size (or at all sizes) and exit without "
                            + "measuring")
    String printSchedule;

    @Option(names = "--print-schedule-rank", paramLabel = "R", defaultValue = "0",
            description = "the rank whose schedules --print-schedule prints (default: ${DEFAULT-VALUE})")
    int printScheduleRank;

    @Option(names = "--explain", description =
            "print the planner's choice for each size of the sweep and exit without measuring")
    boolean explain;

    @Option(names = "--calibrate", description =
            "measure ping-pong per transport, the ring all-reduce and the contention of concurrent all-reduces, "
            + "fit t = alpha + beta*m and suggest a --topology (sizes 8..64M unless -b/-e are given)")
    boolean calibrate;

    @Option(names = "--plot", paramLabel = "FILE",
            description = "also draw busbw (or time) against size, one line per algorithm, to FILE (.png or .svg)")
    Path plot;

    @Option(names = "--plot-from", paramLabel = "JSON[,JSON...]", split = ",",
            description =
                    "draw --plot from the rows of earlier --json files (one line per algorithm over all files) and "
                            + "exit")
    List<Path> plotFrom;

    @Option(names = "--plot-metric", paramLabel = "busbw|time", defaultValue = "busbw",
            description = "what --plot draws (default: ${DEFAULT-VALUE})")
    String plotMetric;

    @Option(names = "--jit-warmup", paramLabel = "N", defaultValue = "20000",
            description = "iterations per size up to 64 KiB before the sweep, for the JIT (default: ${DEFAULT-VALUE})")
    int jitWarmup;

    @Option(names = "--jit-quiet-max", paramLabel = "SECONDS", defaultValue = "10",
            description = "the longest wait after each JIT warm-up for every rank's JIT to go quiet; where the JIT is "
                    + "still at work then, a line on stderr says so (default: ${DEFAULT-VALUE})")
    double jitQuietMaxSeconds;

    @Option(names = "--user-buffers", description =
            "plain Arena buffers instead of the communicator's shared-memory allocator")
    boolean userBuffers;

    @Option(names = "--percentiles", description = "add p50, p99 and max iteration-time columns")
    boolean percentiles;

    @Option(names = "--waits", description = "add how the waits idled per call (waits that idled, the share "
            + "served while spinning, spins, yields, parks, sleeps), the spin of the latest wait and the calling "
            + "thread's CPU time, maximum over the ranks; with --calibrate, the same counts per round trip of each "
            + "ping-pong at both ends, with the spins preempted")
    boolean waits;

    @Option(names = "--straggle", paramLabel = "US", defaultValue = "0",
            description = "the last rank sleeps US microseconds before every measured call, so that the others "
                    + "wait for it past their spin (with --waits: how they idle and the CPU time they spend); the time "
                    + "column includes the sleep")
    long straggleMicros;

    @Option(names = "--json", paramLabel = "FILE",
            description = "also write the results and the environment as JSON to FILE")
    Path json;

    @Option(names = "--jfr", paramLabel = "FILE",
            description =
                    "record a JFR file per rank (FILE.rankR.jfr; with -t local one FILE for all ranks) with the "
                            + "Panamax events "
                    + "dev.panamax.Collective and dev.panamax.Step, written at the end, also when the run fails")
    Path jfr;

    @Option(names = "--jfr-steps", paramLabel = "off|all|DURATION", defaultValue = "all",
            description =
                    "which dev.panamax.Step events --jfr keeps: all, off, or those of stages that took at least "
                            + "DURATION "
                    + "(500us, 2ms) (default: ${DEFAULT-VALUE})")
    String jfrSteps;

    @Option(names = "--launched", description =
            "join a job described by the environment (PANAMAX_RANK, ...) as one rank; implied when PANAMAX_RANK is set")
    boolean launched;

    @Spec
    CommandSpec spec;

    /** What the options describe, once {@link #validate} has checked them. */
    private PerfConfig config;
    /** The shortest dev.panamax.Step event that {@code --jfr} keeps ({@code --jfr-steps}). */
    Duration jfrStepThreshold;
    /** The host communicator's transport (for {@code -t gpu} and {@code -t nccl}, the one under the device backend). */
    TransportKind transportKind;
    /** The backend of {@code -t gpu} / {@code -t nccl}; null for the host transports. */
    GpuBackend backend;
    Plot.Metric metric;
    final PrintStream out;
    final PrintStream err;
    /** The command line as given (null when parsed by a test): the child ranks get it again. */
    String[] args;

    PerfCommand(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    /** Checks the options and builds {@link #config}; throws IllegalArgumentException with a readable message. */
    void validate() {
        if (collective == null && !calibrate && plotFrom == null) {
            throw new IllegalArgumentException("missing COLLECTIVE (allreduce, reducescatter, allgather, broadcast or "
                    + "reduce)");
        }
        PerfCollective c = PerfCollective.parse(collective == null ? "allreduce" : collective);
        if (!List.of("local", "shm", "tcp", "verbs", "auto", "gpu", "nccl")
                .contains(transport.toLowerCase(Locale.ROOT))) {
            throw new IllegalArgumentException("unknown transport '" + transport
                    + "'; known: local, shm, tcp, verbs, auto, gpu, nccl");
        }
        transport = transport.toLowerCase(Locale.ROOT);
        // the device transports' host communicator: shared memory (own stages need every rank on this host), NCCL's
        // also TCP
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
        if (!(jitQuietMaxSeconds >= 0) || jitQuietMaxSeconds > 3600) {
            throw new IllegalArgumentException("--jit-quiet-max takes 0 to 3600 seconds, got " + jitQuietMaxSeconds);
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
        boolean preMulSum = op.equalsIgnoreCase("premulsum");
        ReduceOp reduceOp = preMulSum ? ReduceOp.AVG : ReduceOp.parse(op);
        Topology top = null;
        if (topology != null) {
            top = Topology.parse(topology);
            if (top.size() != ranks) {
                throw new IllegalArgumentException("--topology " + topology + " has " + top.size() + " ranks, -np is "
                        + ranks);
            }
        }
        List<Long> sizes = Sizes.sweep(min, max, factor, increment);
        List<String> algs = backend == GpuBackend.NCCL ? List.of("nccl") : checkAlgorithms(c, type, sizes, top);
        if (printScheduleRank < 0 || printScheduleRank >= ranks) {
            throw new IllegalArgumentException("--print-schedule-rank " + printScheduleRank + " is not a rank of "
                    + ranks);
        }
        if (printSchedule != null && !printSchedule.equals("first") && !printSchedule.equals("all")) {
            throw new IllegalArgumentException("--print-schedule takes first or all, not '" + printSchedule + "'");
        }
        jfrStepThreshold = JfrRecording.parseThreshold(jfrSteps);
        metric = Plot.Metric.parse(plotMetric);
        if (plot != null) {
            Plot.checkFile(plot);
        }
        DataType wireType = wire == null ? null : DataType.parse(wire);
        if (wireType != null && (c != PerfCollective.ALLREDUCE || !Conversions.isNarrowing(type, wireType))) {
            throw new IllegalArgumentException("--wire " + wire + ": all-reduce of float32 or float64 data on a "
                    + "bfloat16 or float16 wire only, not " + c.cliName() + " of " + type.canonicalName());
        }
        if (preMulSum && (!c.reduces() || !type.isFloatingPoint() || wireType != null)) {
            throw new IllegalArgumentException("-o premulsum: all-reduce, reduce-scatter or reduce of a floating-point"
                    + " type only, without --wire");
        }
        if (straggleMicros < 0) {
            throw new IllegalArgumentException("--straggle must not be negative, got " + straggleMicros);
        }
        config = new PerfConfig(c, type, reduceOp, root, sizes, iters, warmup, check == 1, userBuffers, jitWarmup, algs,
                topology, wireType, preMulSum, straggleMicros * 1000, (long) (jitQuietMaxSeconds * 1e9));
    }

    /**
     * What {@code -t gpu} and {@code -t nccl} cannot do: reduce (device memory has all-reduce,
     * reduce-scatter, all-gather and broadcast), calibration, user buffers; the own stages run ring and
     * rhd ({@code auto}: ring; broadcast: ring), NCCL its own choice ({@code auto} or {@code nccl}).
     */
    private void checkDeviceOptions(PerfCollective c) {
        if (c == PerfCollective.REDUCE) {
            throw new IllegalArgumentException("-t " + transport
                    + " runs allreduce, reducescatter, allgather and broadcast, not reduce");
        }
        if (calibrate) {
            throw new IllegalArgumentException("--calibrate measures the host transports, not -t " + transport);
        }
        if (userBuffers) {
            throw new IllegalArgumentException("--user-buffers is for the host transports; -t " + transport
                    + " measures device memory");
        }
        List<String> allowed = backend == GpuBackend.NCCL ? List.of(Algorithms.AUTO, "nccl")
                : c == PerfCollective.BROADCAST ? List.of(Algorithms.AUTO, "ring")
                : List.of(Algorithms.AUTO, "ring", "rhd");
        List<String> mapped = new ArrayList<>();
        for (String a : algorithms == null ? List.of(Algorithms.AUTO) : algorithms) {
            String n = a.trim().toLowerCase(Locale.ROOT);
            if (!allowed.contains(n)) {
                throw new IllegalArgumentException("-t " + transport + " runs "
                        + String.join(" or ", allowed.subList(1, allowed.size()))
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
    private List<String> checkAlgorithms(PerfCollective c, DataType type, List<Long> sizes, Topology top) {
        List<String> known = Algorithms.namesFor(c.api());
        List<String> out = new ArrayList<>();
        for (String a : algorithms == null ? List.of(Algorithms.AUTO) : algorithms) {
            String n = a.trim().toLowerCase(Locale.ROOT);
            if (n.isEmpty() || out.contains(n)) {
                continue;
            }
            if (!n.equals(Algorithms.AUTO) && !known.contains(n)) {
                throw new IllegalArgumentException("unknown algorithm '" + a.trim() + "' for " + c.cliName()
                        + "; known: "
                        + String.join(", ", known) + ", " + Algorithms.AUTO);
            }
            out.add(n);
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("-a names no algorithm");
        }
        int ts = type.byteSize();
        long count = c.count(sizes.getLast(), ts, ranks);
        Problem p = new Problem(c.api(), 0, ranks, count, ts, c.rooted() ? root : 0,
                top != null ? top : Topology.flat(ranks));
        for (String n : out) {
            String why = n.equals(Algorithms.AUTO) ? null : Algorithms.get(n).unsupported(p);
            if (why != null) {
                throw new IllegalArgumentException("algorithm '" + n + "' cannot run " + c.cliName() + " on " + ranks
                        + " ranks: " + why);
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
        PerfReport report = new PerfReport(this);
        if (plotFrom != null) {
            return report.plotFromJson();
        }
        try {
            validate();
        } catch (IllegalArgumentException e) {
            err.println("panamax-perf: " + e.getMessage());
            return PerfMain.EXIT_USAGE;
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
                ok = PlanPrinter.printSchedules(config, ranks, printScheduleRank, printSchedule.equals("all"),
                        timeoutNanos(), out);
            }
            return ok ? 0 : PerfMain.EXIT_USAGE;
        }
        return new PerfLauncher(this, report).run(joinEnvironment);
    }

    /** True when {@code option} (here -np, also spelled --nranks) was not on the command line. */
    boolean isDefault(String option) {
        for (String a : args) {
            if (a.equals(option) || a.equals("--nranks") || a.startsWith("--nranks=")) {
                return false;
            }
        }
        return true;
    }

    /** What the measured buffers are: device memory, plain Arena buffers or the communicator's allocator. */
    String bufferKind() {
        return backend != null ? "device" : userBuffers ? "user" : "communicator";
    }

    long timeoutNanos() {
        return (long) (timeoutSeconds * 1e9);
    }

    Duration timeout() {
        return Duration.ofNanos(timeoutNanos());
    }
}
