package dev.panamax.collectives.internal.device;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.GpuBackend;
import dev.panamax.collectives.LaunchConfig;
import dev.panamax.collectives.Panamax;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.TransportKind;
import dev.panamax.collectives.gpu.GpuCommunicator;
import dev.panamax.cuda.Cuda;
import dev.panamax.cuda.CudaContext;
import dev.panamax.cuda.DeviceMemory;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongToDoubleFunction;

/**
 * A rank process of {@code GpuBackendTest} (or, with one rank, called in the test's JVM): joins the job
 * from the environment over shared memory, uses device {@code PANAMAX_CUDA_DEVICE} (default 0), and
 * checks every element of device collectives copied back to the host:
 *
 * <ul>
 * <li>{@code communicator nccl|stages}: {@link GpuCommunicator} all-reduce (float32 SUM in place,
 *     AVG into a view of another allocation, int32 MAX), reduce-scatter, all-gather and broadcast;</li>
 * <li>{@code blueconnect SPEC B0,B1,... true|false}: {@link DeviceBlueConnect} over topology SPEC with
 *     those level backends (including levels of fan-out 1 when true), all-reduce of several types and
 *     operators, in place and not.</li>
 * </ul>
 *
 * Prints "OK" and exits 0, or prints "FAILED ..." and exits 4.
 */
public final class GpuBackendRankProcess {
    private static final long[] COUNTS = {0, 1, 3, 5, 1000003, (1 << 22) + 5};

    public static void main(String[] args) {
        int device = Integer.parseInt(System.getenv().getOrDefault("PANAMAX_CUDA_DEVICE", "0"));
        try (Communicator host = Panamax.builder().config(LaunchConfig.fromEnvironment())
                .transport(TransportKind.SHM).timeout(Duration.ofSeconds(90)).connect();
             CudaContext ctx = Cuda.device(device).retainPrimaryContext()) {
            List<String> wrong = run(host, ctx, args);
            if (!wrong.isEmpty()) {
                System.out.println("FAILED " + wrong.size() + " wrong, first: " + wrong.getFirst());
                System.exit(4);
            }
            System.out.println("OK");
        } catch (RuntimeException e) {
            System.out.println("FAILED " + e);
            e.printStackTrace(System.out);
            System.exit(4);
        }
    }

    /** Runs the checks {@code args} names on this rank; returns what was wrong. */
    static List<String> run(Communicator host, CudaContext ctx, String[] args) {
        List<String> wrong = new ArrayList<>();
        switch (args[0]) {
            case "communicator" -> {
                try (GpuCommunicator gpu = GpuCommunicator.create(host, ctx,
                        GpuBackend.valueOf(args[1].toUpperCase()))) {
                    communicator(gpu, ctx, wrong);
                }
            }
            case "blueconnect" -> {
                List<GpuBackend> backends = new ArrayList<>();
                for (String b : args[2].split(",")) {
                    backends.add(GpuBackend.valueOf(b.toUpperCase()));
                }
                try (DeviceBlueConnect<DeviceMemory> bc =
                        DeviceBlueConnect.cuda(host, ctx, Topology.parse(args[1]), backends,
                        Boolean.parseBoolean(args[3]))) {
                    System.out.println(bc.describe());
                    blueConnect(bc, ctx, wrong);
                }
            }
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
        return wrong;
    }

    /** The input of rank {@code q} at element {@code i}: small integers, so every result is exact in every type. */
    static double input(int q, int n, long i, ReduceOp op) {
        return switch (op) {
            case PROD -> i % n == q ? 2 : 1;
            case MIN, MAX -> (q * 7919L + i * 31) % 101;
            default -> 1 + (q * 7 + i * 13) % 5;
        };
    }

    static double expected(int n, long i, DataType type, ReduceOp op) {
        double acc = input(0, n, i, op);
        for (int q = 1; q < n; q++) {
            double v = input(q, n, i, op);
            acc = switch (op) {
                case SUM, AVG -> acc + v;
                case PROD -> acc * v;
                case MIN -> Math.min(acc, v);
                case MAX -> Math.max(acc, v);
            };
        }
        if (op == ReduceOp.AVG) {
            acc = type.isFloatingPoint() ? acc / n : (long) acc / n;
        }
        return acc;
    }

    private static boolean matches(DataType type, double got, double want) {
        if (!type.isFloatingPoint()) {
            return got == want;
        }
        double tol = switch (type) {
            case FLOAT16 -> 2e-3;
            case BFLOAT16 -> 1.6e-2;
            default -> 1e-6;
        };
        return Math.abs(got - want) <= tol * Math.max(1, Math.abs(want));
    }

    private static void fill(MemorySegment h, DataType type, long count, LongToDoubleFunction f) {
        for (long i = 0; i < count; i++) {
            type.setFromDouble(h, 0, i, f.applyAsDouble(i));
        }
    }

    private static void check(List<String> wrong, String what, MemorySegment h, DataType type, long count,
                              LongToDoubleFunction want) {
        for (long i = 0; i < count; i++) {
            double w = want.applyAsDouble(i);
            double g = type.getAsDouble(h, 0, i);
            if (!matches(type, g, w)) {
                wrong.add(what + ": element " + i + " is " + g + ", expected " + w);
                return;
            }
        }
    }

    private static void communicator(GpuCommunicator gpu, CudaContext ctx, List<String> wrong) {
        int r = gpu.rank();
        int n = gpu.size();
        long max = COUNTS[COUNTS.length - 1];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment h = arena.allocate(max * n * 4 + 4, 64);
            DeviceMemory a = ctx.allocate(max * n * 4 + 4);
            DeviceMemory b = ctx.allocate(max * n * 4 + 256 + 4);
            for (long count : COUNTS) {
                String at = gpu.backend() + " rank " + r + " of " + n + " count " + count;
                long bytes = count * 4;
                MemorySegment hs = h.asSlice(0, bytes);
                // all-reduce float32 SUM in place
                fill(hs, DataType.FLOAT32, count, i -> input(r, n, i, ReduceOp.SUM));
                a.slice(0, bytes).copyFromHost(hs);
                gpu.allReduce(a.slice(0, bytes), count, DataType.FLOAT32, ReduceOp.SUM);
                a.slice(0, bytes).copyToHost(hs);
                check(wrong, at + " all-reduce float32 sum", hs, DataType.FLOAT32, count, i ->
                        expected(n, i, DataType.FLOAT32, ReduceOp.SUM));
                // AVG into a view at an offset of another allocation
                fill(hs, DataType.FLOAT32, count, i -> input(r, n, i, ReduceOp.AVG));
                a.slice(0, bytes).copyFromHost(hs);
                gpu.allReduce(a.slice(0, bytes), b.slice(256, bytes), count, DataType.FLOAT32, ReduceOp.AVG);
                b.slice(256, bytes).copyToHost(hs);
                check(wrong, at + " all-reduce float32 avg", hs, DataType.FLOAT32, count, i ->
                        expected(n, i, DataType.FLOAT32, ReduceOp.AVG));
                // int32 MAX in place
                fill(hs, DataType.INT32, count, i -> input(r, n, i, ReduceOp.MAX));
                a.slice(0, bytes).copyFromHost(hs);
                gpu.allReduce(a.slice(0, bytes), count, DataType.INT32, ReduceOp.MAX);
                a.slice(0, bytes).copyToHost(hs);
                check(wrong, at + " all-reduce int32 max", hs, DataType.INT32, count, i ->
                        expected(n, i, DataType.INT32, ReduceOp.MAX));
                // reduce-scatter float32 SUM: n * count in, block r out
                MemorySegment whole = h.asSlice(0, bytes * n);
                fill(whole, DataType.FLOAT32, count * n, i -> input(r, n, i, ReduceOp.SUM));
                a.slice(0, bytes * n).copyFromHost(whole);
                gpu.reduceScatter(a.slice(0, bytes * n), b.slice(0, bytes), count, DataType.FLOAT32, ReduceOp.SUM);
                b.slice(0, bytes).copyToHost(hs);
                check(wrong, at + " reduce-scatter float32 sum", hs, DataType.FLOAT32, count,
                        i -> expected(n, r * count + i, DataType.FLOAT32, ReduceOp.SUM));
                // all-gather int32: block q from rank q
                fill(hs, DataType.INT32, count, i -> input(r, n, i, ReduceOp.MAX) + 1000 * r);
                a.slice(0, bytes).copyFromHost(hs);
                gpu.allGather(a.slice(0, bytes), b.slice(0, bytes * n), count, DataType.INT32);
                b.slice(0, bytes * n).copyToHost(whole);
                check(wrong, at + " all-gather int32", whole, DataType.INT32, count * n,
                        i -> input((int) (i / count), n, i % count, ReduceOp.MAX) + 1000 * (i / count));
                // broadcast float32 from the last rank, in place
                int root = n - 1;
                fill(hs, DataType.FLOAT32, count, i -> r == root ? input(root, n, i, ReduceOp.SUM) : -1);
                a.slice(0, bytes).copyFromHost(hs);
                gpu.broadcast(a.slice(0, bytes), a.slice(0, bytes), count, DataType.FLOAT32, root);
                a.slice(0, bytes).copyToHost(hs);
                check(wrong, at + " broadcast float32", hs, DataType.FLOAT32, count, i ->
                        input(root, n, i, ReduceOp.SUM));
            }
        }
    }

    private static void blueConnect(DeviceBlueConnect<DeviceMemory> bc, CudaContext ctx, List<String> wrong) {
        int r = bc.rank();
        int n = bc.size();
        long max = COUNTS[COUNTS.length - 1];
        Object[][] cases = {
                {DataType.FLOAT32, ReduceOp.SUM}, {DataType.FLOAT32, ReduceOp.AVG}, {DataType.INT32, ReduceOp.MAX},
                {DataType.INT32, ReduceOp.AVG}, {DataType.BFLOAT16, ReduceOp.SUM}, {DataType.INT8, ReduceOp.PROD},
                {DataType.FLOAT64, ReduceOp.MIN}, {DataType.FLOAT16, ReduceOp.SUM}};
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment h = arena.allocate(max * 8, 64);
            DeviceMemory a = ctx.allocate(max * 8);
            DeviceMemory b = ctx.allocate(max * 8 + 256);
            int call = 0;
            for (long count : COUNTS) {
                for (Object[] c : cases) {
                    DataType type = (DataType) c[0];
                    ReduceOp op = (ReduceOp) c[1];
                    long bytes = count * type.byteSize();
                    boolean inPlace = call++ % 2 == 0;
                    MemorySegment hs = h.asSlice(0, bytes);
                    fill(hs, type, count, i -> input(r, n, i, op));
                    a.slice(0, bytes).copyFromHost(hs);
                    DeviceMemory out = inPlace ? a.slice(0, bytes) : b.slice(256, bytes);
                    bc.allReduce(a.slice(0, bytes), out, count, type, op);
                    out.copyToHost(hs);
                    check(wrong, bc.describe() + " rank " + r + " " + type + " " + op + " count " + count
                            + (inPlace ? " in place" : ""),
                            hs, type, count, i -> expected(n, i, type, op));
                }
            }
        }
    }
}
