package dev.panamax.collectives;

import dev.panamax.collectives.gpu.GpuCommunicator;
import dev.panamax.cuda.Cuda;
import dev.panamax.cuda.CudaContext;
import dev.panamax.cuda.DeviceMemory;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;

/**
 * A rank process of {@code GpuMultiProcessTest}: joins the job from the environment (shared
 * memory), creates a {@link GpuCommunicator} on device {@code PANAMAX_CUDA_DEVICE} (default 0),
 * and for ring and rhd runs float32 SUM and AVG, int32 MAX all-reduces (in place and not) of
 * rank-dependent data, copies back and checks every element. Prints "OK" or "FAILED ..." and exits
 * 0 or 4.
 */
public final class GpuRankProcess {
    private static final long[] COUNTS = {1, 3, 1000003, (1 << 22) + 5};

    public static void main(String[] args) {
        int device = Integer.parseInt(System.getenv().getOrDefault("PANAMAX_CUDA_DEVICE", "0"));
        try (Communicator host = Panamax.builder().config(LaunchConfig.fromEnvironment())
                .transport(TransportKind.SHM).timeout(Duration.ofSeconds(60)).connect();
             CudaContext ctx = Cuda.device(device).retainPrimaryContext();
             GpuCommunicator gpu = GpuCommunicator.create(host, ctx);
             Arena arena = Arena.ofConfined()) {
            int r = gpu.rank();
            int n = gpu.size();
            long max = COUNTS[COUNTS.length - 1];
            MemorySegment h = arena.allocate(max * 4, 64);
            DeviceMemory a = ctx.allocate(max * 4);
            DeviceMemory b = ctx.allocate(max * 4 + 256);
            for (String algorithm : new String[] {"ring", "rhd"}) {
                gpu.setAlgorithm(algorithm);
                for (long count : COUNTS) {
                    MemorySegment hs = h.asSlice(0, count * 4);
                    // float32 SUM in place: element i of rank q is q + 1 + i % 7
                    for (long i = 0; i < count; i++) {
                        hs.setAtIndex(ValueLayout.JAVA_FLOAT, i, r + 1 + i % 7);
                    }
                    a.slice(0, count * 4).copyFromHost(hs);
                    gpu.allReduce(a.slice(0, count * 4), count, DataType.FLOAT32, ReduceOp.SUM);
                    a.slice(0, count * 4).copyToHost(hs);
                    for (long i = 0; i < count; i++) {
                        float want = n * (n + 1) / 2f + n * (i % 7);
                        check(hs.getAtIndex(ValueLayout.JAVA_FLOAT, i) == want, algorithm, "float32 sum", count, i,
                                want,
                                hs.getAtIndex(ValueLayout.JAVA_FLOAT, i));
                    }
                    // float32 AVG into a view at an offset of another allocation (exported by handle and offset)
                    DeviceMemory out = b.slice(256, count * 4);
                    a.slice(0, count * 4).copyFromHost(fill(hs, r, count));
                    gpu.allReduce(a.slice(0, count * 4), out, count, DataType.FLOAT32, ReduceOp.AVG);
                    out.copyToHost(hs);
                    for (long i = 0; i < count; i++) {
                        float want = (n + 1) / 2f + (i % 7);
                        check(Math.abs(hs.getAtIndex(ValueLayout.JAVA_FLOAT, i) - want) <= 1e-5f * want, algorithm,
                                "float32 avg", count, i,
                                want, hs.getAtIndex(ValueLayout.JAVA_FLOAT, i));
                    }
                    // int32 MAX in place: element i of rank q is (q * 7919 + i * 31) % 1009
                    for (long i = 0; i < count; i++) {
                        hs.setAtIndex(ValueLayout.JAVA_INT, i, (int) ((r * 7919L + i * 31) % 1009));
                    }
                    a.slice(0, count * 4).copyFromHost(hs);
                    gpu.allReduce(a.slice(0, count * 4), count, DataType.INT32, ReduceOp.MAX);
                    a.slice(0, count * 4).copyToHost(hs);
                    for (long i = 0; i < count; i++) {
                        long want = 0;
                        for (int q = 0; q < n; q++) {
                            want = Math.max(want, (q * 7919L + i * 31) % 1009);
                        }
                        check(hs.getAtIndex(ValueLayout.JAVA_INT, i) == want, algorithm, "int32 max", count, i, want,
                                hs.getAtIndex(ValueLayout.JAVA_INT, i));
                    }
                }
            }
            System.out.println("OK");
        } catch (RuntimeException e) {
            System.out.println("FAILED " + e);
            e.printStackTrace(System.out);
            System.exit(4);
        }
    }

    private static MemorySegment fill(MemorySegment hs, int r, long count) {
        for (long i = 0; i < count; i++) {
            hs.setAtIndex(ValueLayout.JAVA_FLOAT, i, r + 1 + i % 7);
        }
        return hs;
    }

    private static void check(boolean ok, String algorithm, String what, long count, long i, Object want, Object got) {
        if (!ok) {
            System.out.println("FAILED " + algorithm + " " + what + " count " + count + ": element " + i + " is " + got
                    + ", expected " + want);
            System.exit(5);
        }
    }
}
