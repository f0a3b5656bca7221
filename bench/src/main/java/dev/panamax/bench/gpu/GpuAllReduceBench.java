package dev.panamax.bench.gpu;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.GpuBackend;
import dev.panamax.collectives.LaunchConfig;
import dev.panamax.collectives.Panamax;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.TransportKind;
import dev.panamax.collectives.gpu.GpuBlueConnect;
import dev.panamax.collectives.gpu.GpuCommunicator;
import dev.panamax.cuda.Cuda;
import dev.panamax.cuda.CudaContext;
import dev.panamax.cuda.DeviceMemory;
import dev.panamax.cuda.Nccl;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * All-reduce of float32 SUM on device memory through {@link GpuCommunicator} (own stages: CUDA IPC
 * between rank processes on one host; or NCCL, one device per rank), printed like nccl-tests: size,
 * count, time per call, algbw = size / time and busbw = algbw * 2(n-1)/n (GB/s = 1e9 bytes/s), for
 * ring, rhd and BlueConnect (own stages) or NCCL's choice, with the elements a checked call got wrong.
 *
 * <pre>
 * GpuAllReduceBench [--ranks 2] [--backend stages|nccl] [--max-mib 256] [--iters 20] [--warmup 5]
 *     [--algorithms ring,rhd,blueconnect] [--topology 2x2]
 * </pre>
 *
 * With {@code --backend nccl} rank r uses device {@code r}, so {@code --ranks} must not exceed the
 * devices; the own stages put every rank on {@code PANAMAX_CUDA_DEVICE} (default 0).
 *
 * Without {@code PANAMAX_RANK} in the environment it is the launcher: it starts the rank processes
 * (this class, same JVM options and class path) and relays rank 0's output. Times are the
 * slowest rank's mean over the iterations (a max-all-reduce over the host communicator).
 */
public final class GpuAllReduceBench {
    private GpuAllReduceBench() {
    }

    public static void main(String[] args) throws Exception {
        int ranks = 2;
        long maxMib = 256;
        int iters = 20;
        int warmup = 5;
        String algorithms = null;
        String topology = null;
        GpuBackend backend = GpuBackend.STAGES;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--ranks" -> ranks = Integer.parseInt(args[++i]);
                case "--max-mib" -> maxMib = Long.parseLong(args[++i]);
                case "--iters" -> iters = Integer.parseInt(args[++i]);
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--algorithms" -> algorithms = args[++i];
                case "--topology" -> topology = args[++i];
                case "--backend" -> backend = GpuBackend.valueOf(args[++i].toUpperCase(Locale.ROOT));
                default -> {
                    System.err.println("usage: GpuAllReduceBench [--ranks N] [--backend stages|nccl] [--max-mib M] "
                            + "[--iters I] [--warmup W] "
                            + "[--algorithms ring,rhd,blueconnect] [--topology 2x2]");
                    System.exit(2);
                }
            }
        }
        if (System.getenv("PANAMAX_RANK") == null) {
            System.exit(launch(ranks, backend, args));
        }
        if (algorithms == null) {
            algorithms = backend == GpuBackend.NCCL ? "nccl" : "ring,rhd,blueconnect";
        }
        rank(backend, maxMib << 20, iters, warmup, algorithms.split(","), topology);
    }

    /** Starts the ranks; returns 0 when all exit with 0. */
    private static int launch(int ranks, GpuBackend backend, String[] args) throws IOException, InterruptedException {
        if (!Cuda.isAvailable()) {
            System.out.println("GpuAllReduceBench: no CUDA: " + Cuda.unavailabilityCause().getMessage());
            return 1;
        }
        if (backend == GpuBackend.NCCL && !Nccl.isAvailable()) {
            System.out.println("GpuAllReduceBench: no NCCL: " + Nccl.unavailabilityCause().getMessage());
            return 1;
        }
        if (backend == GpuBackend.NCCL && ranks > Cuda.deviceCount()) {
            System.out.println("GpuAllReduceBench: --backend nccl needs a device per rank: " + ranks + " ranks, "
                    + Cuda.deviceCount() + " device(s)");
            return 1;
        }
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), GpuAllReduceBench.class.getName()));
        cmd.addAll(List.of(args));
        List<Process> ps = new ArrayList<>();
        for (int r = 0; r < ranks; r++) {
            ProcessBuilder pb = new ProcessBuilder(cmd);
            pb.environment().put("PANAMAX_RANK", Integer.toString(r));
            pb.environment().put("PANAMAX_WORLD_SIZE", Integer.toString(ranks));
            pb.environment().put("PANAMAX_MASTER_ADDR", "127.0.0.1");
            pb.environment().put("PANAMAX_MASTER_PORT", Integer.toString(port));
            pb.environment().remove("PANAMAX_NODE");
            if (backend == GpuBackend.NCCL) {
                pb.environment().put("PANAMAX_CUDA_DEVICE", Integer.toString(r));
            }
            // rank 0 prints the table; the others only their errors
            pb.redirectOutput(r == 0 ? ProcessBuilder.Redirect.INHERIT : ProcessBuilder.Redirect.DISCARD);
            pb.redirectError(ProcessBuilder.Redirect.INHERIT);
            ps.add(pb.start());
        }
        int status = 0;
        for (int r = 0; r < ranks; r++) {
            Process p = ps.get(r);
            if (!p.waitFor(30, TimeUnit.MINUTES)) {
                System.err.println("rank " + r + " did not finish");
                status = 1;
            } else if (p.exitValue() != 0) {
                System.err.println("rank " + r + " exited with " + p.exitValue());
                status = 1;
            }
        }
        for (Process p : ps) {
            p.destroyForcibly();
        }
        return status;
    }

    /** An in-place float32 SUM all-reduce of the first {@code count} elements of {@code buffer}. */
    @FunctionalInterface
    private interface AllReduceCall {
        void run(DeviceMemory buffer, long count);
    }

    /** One all-reduce implementation under test, and what closes it. */
    private record InPlaceAllReduce(AllReduceCall call, Runnable closer) implements AutoCloseable {
        void run(DeviceMemory buffer, long count) {
            call.run(buffer, count);
        }

        @Override
        public void close() {
            closer.run();
        }
    }

    private static void rank(GpuBackend backend, long maxBytes, int iters, int warmup, String[] algorithms,
            String topologySpec) {
        int device = Integer.parseInt(System.getenv().getOrDefault("PANAMAX_CUDA_DEVICE", "0"));
        long wrongTotal = 0;
        try (Communicator host = Panamax.builder().config(LaunchConfig.fromEnvironment())
                .transport(TransportKind.SHM).timeout(Duration.ofSeconds(120)).connect();
             CudaContext ctx = Cuda.device(device).retainPrimaryContext();
             GpuCommunicator gpu = GpuCommunicator.create(host, ctx, backend);
             DeviceMemory buf = ctx.allocate(maxBytes);
             Arena arena = Arena.ofConfined()) {
            int n = gpu.size();
            buf.fill((byte) 0);
            MemorySegment t = arena.allocate(8, 8);
            MemorySegment pattern = arena.allocate(maxBytes, 4);
            if (gpu.rank() == 0) {
                System.out.println("# GpuAllReduceBench: " + n + " rank processes on " + ctx.device().name()
                        + ", backend " + backend
                        + ", float32 sum, in place, "
                        + iters + " iterations after " + warmup + " warm-up; #wrong: elements off the expected "
                        + "sum in one checked call after the timed ones, all ranks");
                System.out.printf("# %-11s %12s %12s %10s %8s %8s %7s%n", "algo", "size(B)", "count", "time(us)",
                        "algbw", "busbw", "#wrong");
            }
            for (String algorithm : algorithms) {
                try (InPlaceAllReduce op = open(algorithm, host, ctx, gpu, topologySpec)) {
                    for (long bytes = 8; bytes <= maxBytes; bytes *= 2) {
                        long count = bytes / 4;
                        DeviceMemory b = buf.slice(0, bytes);
                        for (int i = 0; i < warmup; i++) {
                            op.run(b, count);
                        }
                        host.barrier();
                        long start = System.nanoTime();
                        for (int i = 0; i < iters; i++) {
                            op.run(b, count);
                        }
                        double seconds = (System.nanoTime() - start) / 1e9 / iters;
                        t.set(ValueLayout.JAVA_DOUBLE, 0, seconds);
                        host.allReduce(t, 1, DataType.FLOAT64, ReduceOp.MAX);
                        seconds = t.get(ValueLayout.JAVA_DOUBLE, 0);
                        long wrong = checkedCall(op, b, count, pattern.asSlice(0, bytes), gpu.rank(), n);
                        t.set(ValueLayout.JAVA_LONG, 0, wrong);
                        host.allReduce(t, 1, DataType.INT64, ReduceOp.SUM);
                        wrong = t.get(ValueLayout.JAVA_LONG, 0);
                        wrongTotal += wrong;
                        double algbw = bytes / seconds / 1e9;
                        if (gpu.rank() == 0) {
                            System.out.printf(Locale.ROOT, "  %-11s %12d %12d %10.1f %8.2f %8.2f %7d%n", algorithm,
                                    bytes, count, seconds * 1e6, algbw, algbw * 2 * (n - 1) / n, wrong);
                        }
                    }
                }
            }
        }
        if (wrongTotal != 0) {
            System.err.println("GpuAllReduceBench: " + wrongTotal + " wrong elements");
            System.exit(1);
        }
    }

    /**
     * {@code ring} and {@code rhd} run through {@code gpu} (or {@code nccl} on the NCCL backend); {@code
     * blueconnect} through a {@link GpuBlueConnect} with the own stages on every level of {@code topologySpec}
     * (default {@code 2x(n/2)} for an even n of at least 4, else one level of n).
     */
    private static InPlaceAllReduce open(String algorithm, Communicator host, CudaContext ctx, GpuCommunicator gpu,
            String topologySpec) {
        if (!algorithm.equals("blueconnect")) {
            gpu.setAlgorithm(algorithm);
            return new InPlaceAllReduce((b, count) -> gpu.allReduce(b, count, DataType.FLOAT32, ReduceOp.SUM), () -> {
            });
        }
        int n = host.size();
        String spec = topologySpec != null ? topologySpec : n >= 4 && n % 2 == 0 ? "2x" + n / 2 : Integer.toString(n);
        Topology topology = Topology.parse(spec);
        List<GpuBackend> backends = new ArrayList<>();
        for (int i = 0; i < topology.levels(); i++) {
            backends.add(GpuBackend.STAGES);
        }
        GpuBlueConnect bc = GpuBlueConnect.create(host, ctx, topology, backends);
        if (host.rank() == 0) {
            System.out.println("# blueconnect: " + bc);
        }
        return new InPlaceAllReduce((b, count) -> bc.allReduce(b, count, DataType.FLOAT32, ReduceOp.SUM), bc::close);
    }

    /** One all-reduce of a known input ({@link #fillInput}); returns the elements of this rank that differ. */
    private static long checkedCall(InPlaceAllReduce op, DeviceMemory b, long count, MemorySegment host, int rank,
            int n) {
        fillInput(host, count, rank);
        b.copyFromHost(host);
        op.run(b, count);
        b.copyToHost(host);
        return countWrong(host, count, n);
    }

    /**
     * Element i of rank r's input is (r + 1) * (i % 13 + 1), so the sum over n ranks is n(n + 1)/2 * (i % 13 + 1),
     * exact in float32.
     */
    static void fillInput(MemorySegment host, long count, int rank) {
        for (long i = 0; i < count; i++) {
            host.setAtIndex(ValueLayout.JAVA_FLOAT, i, (rank + 1) * (float) (i % 13 + 1));
        }
    }

    /** The elements of the first {@code count} of {@code result} that are not the sum of {@link #fillInput}. */
    static long countWrong(MemorySegment result, long count, int ranks) {
        float sumOfRanks = ranks * (ranks + 1) / 2f;
        long wrong = 0;
        for (long i = 0; i < count; i++) {
            if (result.getAtIndex(ValueLayout.JAVA_FLOAT, i) != sumOfRanks * (i % 13 + 1)) {
                wrong++;
            }
        }
        return wrong;
    }
}
