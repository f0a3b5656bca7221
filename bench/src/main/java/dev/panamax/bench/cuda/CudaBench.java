package dev.panamax.bench.cuda;

import dev.panamax.bindings.cuda.cuda_h;
import dev.panamax.bindings.nccl.nccl_h;
import dev.panamax.cuda.Cuda;
import dev.panamax.cuda.CudaContext;
import dev.panamax.cuda.CudaDevice;
import dev.panamax.cuda.CudaEvent;
import dev.panamax.cuda.CudaStream;
import dev.panamax.cuda.DeviceMemory;
import dev.panamax.cuda.Nccl;
import dev.panamax.cuda.NcclCommunicator;
import dev.panamax.cuda.PinnedMemory;
import dev.panamax.cuda.ReductionKernels;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;

/**
 * Measures, on one GPU: the cost of a CUDA driver call through FFM, and the bandwidth of pinned host-to-device,
 * device-to-host and device-to-device copies from 1 MiB to 256 MiB (timed with CUDA events on one stream).
 * Run with {@code --enable-native-access=ALL-UNNAMED}; see docs/reference/cuda.md.
 */
public final class CudaBench {
    private static final long MIB = 1L << 20;

    private CudaBench() {
    }

    public static void main(String[] args) {
        int ordinal = 0;
        long maxMib = 256;
        long calls = 2_000_000;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--help", "-h" -> {
                    System.out.println("""
                            usage: CudaBench [--device N] [--max-mib M] [--calls C]
                              --device N    the CUDA device ordinal (default 0)
                              --max-mib M   the largest copy, in MiB; sizes double from 1 MiB (default 256)
                              --calls C     driver calls per overhead run (default 2000000)
                            Prints the device, the FFM cost per driver call (ns) and the copy bandwidth (GB/s,
                            1e9 bytes/s) of pinned host->device, device->host and device->device copies; with NCCL
                            (PANAMAX_LIBRARY_NCCL), the cost of NCCL calls and one-rank all-reduce latency.""");
                    return;
                }
                case "--device" -> ordinal = Integer.parseInt(value(args, ++i));
                case "--max-mib" -> maxMib = Long.parseLong(value(args, ++i));
                case "--calls" -> calls = Long.parseLong(value(args, ++i));
                default -> {
                    System.err.println("CudaBench: unknown argument '" + args[i] + "' (see --help)");
                    System.exit(2);
                }
            }
        }
        if (!Cuda.isAvailable()) {
            System.err.println("CudaBench: CUDA is not available: " + Cuda.unavailabilityCause().getMessage());
            System.exit(1);
        }
        CudaDevice device = Cuda.device(ordinal);
        int version = Cuda.driverVersion();
        System.out.printf(Locale.ROOT, "device %d: %s (compute capability %d.%d, %.1f GiB), driver CUDA %d.%d%n",
                ordinal, device.name(), device.computeCapabilityMajor(), device.computeCapabilityMinor(),
                device.totalMemoryBytes() / (double) (1L << 30), version / 1000, version % 1000 / 10);
        try (CudaContext context = device.retainPrimaryContext()) {
            overhead(context, calls);
            bandwidth(context, maxMib * MIB);
            nccl(context, calls);
        }
    }

    private static String value(String[] args, int i) {
        if (i >= args.length) {
            System.err.println("CudaBench: " + args[i - 1] + " needs a value (see --help)");
            System.exit(2);
        }
        return args[i];
    }

    private static void overhead(CudaContext context, long calls) {
        System.out.printf(Locale.ROOT, "driver call cost (ns/call, best of 5 runs of %d calls):%n", calls);
        try (CudaStream stream = context.createStream(); Arena arena = Arena.ofConfined()) {
            context.makeCurrent();
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            MemorySegment handle = stream.handle();
            report("cuCtxGetCurrent", best(calls, () -> {
                for (long i = 0; i < calls; i++) {
                    if (cuda_h.cuCtxGetCurrent(out) != 0) {
                        throw new IllegalStateException("cuCtxGetCurrent failed");
                    }
                }
            }));
            report("cuStreamQuery (idle stream)", best(calls, () -> {
                for (long i = 0; i < calls; i++) {
                    if (cuda_h.cuStreamQuery(handle) != 0) {
                        throw new IllegalStateException("cuStreamQuery: the stream is not idle");
                    }
                }
            }));
            report("CudaStream.isIdle (+ cuCtxSetCurrent)", best(calls, () -> {
                for (long i = 0; i < calls; i++) {
                    if (!stream.isIdle()) {
                        throw new IllegalStateException("the stream is not idle");
                    }
                }
            }));
            launches(context, stream, arena, Math.max(1, calls / 20));
        }
    }

    /**
     * The cost of queueing a kernel: {@code launches} launches of {@code panamax_reduce_sum_f32} on one element
     * (one block of 256 threads), then one stream synchronize, ns per launch, best of 5 runs; once through
     * {@code cuLaunchKernel} with its parameters prepared (the FFM call alone, as scripts/gpu/peers/driver_calls.c
     * measures it from C) and once through {@link ReductionKernels#reduce} (the API, which checks its arguments
     * and builds the parameters per call). Where the GPU runs the kernels slower than they are queued, both show
     * the GPU's rate.
     */
    private static void launches(CudaContext context, CudaStream stream, Arena arena, long launches) {
        MemorySegment module = arena.allocate(ValueLayout.ADDRESS);
        MemorySegment function = arena.allocate(ValueLayout.ADDRESS);
        byte[] ptx;
        try (InputStream in = ReductionKernels.class.getResourceAsStream("reduce.ptx")) {
            if (in == null) {
                throw new IllegalStateException("resource dev/panamax/cuda/reduce.ptx is missing");
            }
            ptx = in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        MemorySegment image = arena.allocate(ptx.length + 1L);
        MemorySegment.copy(ptx, 0, image, ValueLayout.JAVA_BYTE, 0, ptx.length);
        check(cuda_h.cuModuleLoadData(module, image), "cuModuleLoadData(reduce.ptx)");
        MemorySegment m = module.get(ValueLayout.ADDRESS, 0);
        try (ReductionKernels kernels = ReductionKernels.load(context);
             DeviceMemory inout = context.allocate(16);
             DeviceMemory in = context.allocate(16)) {
            inout.fill((byte) 0);
            in.fill((byte) 0);
            check(cuda_h.cuModuleGetFunction(function, m, arena.allocateFrom("panamax_reduce_sum_f32")),
                    "cuModuleGetFunction(panamax_reduce_sum_f32)");
            MemorySegment f = function.get(ValueLayout.ADDRESS, 0);
            MemorySegment values = arena.allocate(ValueLayout.JAVA_LONG, 3);
            values.setAtIndex(ValueLayout.JAVA_LONG, 0, inout.address());
            values.setAtIndex(ValueLayout.JAVA_LONG, 1, in.address());
            values.setAtIndex(ValueLayout.JAVA_LONG, 2, 1);
            MemorySegment params = arena.allocate(ValueLayout.ADDRESS, 3);
            for (int i = 0; i < 3; i++) {
                params.setAtIndex(ValueLayout.ADDRESS, i, values.asSlice(8L * i, 8));
            }
            MemorySegment s = stream.handle();
            report("cuLaunchKernel (1 element)", best(launches, () -> {
                for (long i = 0; i < launches; i++) {
                    check(cuda_h.cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, s, params, MemorySegment.NULL),
                            "cuLaunchKernel");
                }
                stream.synchronize();
            }));
            report("ReductionKernels.reduce (1 element)", best(launches, () -> {
                for (long i = 0; i < launches; i++) {
                    kernels.reduce(ReduceOp.SUM, DataType.FLOAT32, inout, in, 1, stream);
                }
                stream.synchronize();
            }));
        } finally {
            check(cuda_h.cuModuleUnload(m), "cuModuleUnload(reduce.ptx)");
        }
    }

    private static void check(int rc, String call) {
        if (rc != 0) {
            throw new IllegalStateException(call + " failed with CUresult " + rc);
        }
    }

    private static double best(long calls, Runnable run) {
        double best = Double.MAX_VALUE;
        for (int r = 0; r < 5; r++) {
            long t0 = System.nanoTime();
            run.run();
            best = Math.min(best, (System.nanoTime() - t0) / (double) calls);
        }
        return best;
    }

    private static void report(String what, double nanos) {
        System.out.printf(Locale.ROOT, "  %-40s %8.1f%n", what, nanos);
    }

    private static void bandwidth(CudaContext context, long maxBytes) {
        System.out.println("copy bandwidth (GB/s, pinned host memory, CUDA events on one stream):");
        System.out.printf(Locale.ROOT, "  %10s %10s %10s %10s%n", "size", "H->D", "D->H", "D->D");
        try (CudaStream stream = context.createStream();
             CudaEvent start = context.createEvent(true);
             CudaEvent end = context.createEvent(true);
             PinnedMemory host = context.allocatePinned(maxBytes);
             DeviceMemory a = context.allocate(maxBytes);
             DeviceMemory b = context.allocate(maxBytes)) {
            host.segment().fill((byte) 1);
            a.fill((byte) 2);
            for (long size = MIB; size <= maxBytes; size *= 2) {
                MemorySegment h = host.segment().asSlice(0, size);
                DeviceMemory da = a.slice(0, size);
                DeviceMemory db = b.slice(0, size);
                // Enough repetitions to move about 4 GiB, at least 5.
                int reps = (int) Math.max(5, Math.min(1000, (4L << 30) / size));
                double h2d = rate(size, reps, stream, start, end, () -> da.copyFromHostAsync(h, stream));
                double d2h = rate(size, reps, stream, start, end, () -> da.copyToHostAsync(h, stream));
                double d2d = rate(size, reps, stream, start, end, () -> db.copyFromAsync(da, stream));
                System.out.printf(Locale.ROOT, "  %6d MiB %10.1f %10.1f %10.1f%n", size / MIB, h2d, d2h, d2d);
            }
        }
    }

    /** GB/s of {@code reps} copies of {@code size} bytes queued by {@code copy}, after two untimed ones. */
    private static double rate(long size, int reps, CudaStream stream, CudaEvent start, CudaEvent end, Runnable copy) {
        copy.run();
        copy.run();
        stream.synchronize();
        start.record(stream);
        for (int i = 0; i < reps; i++) {
            copy.run();
        }
        end.record(stream);
        end.synchronize();
        double seconds = end.elapsedMillisSince(start) / 1e3;
        return size * (double) reps / seconds / 1e9;
    }

    /**
     * With NCCL available: the FFM cost of NCCL calls on a one-rank communicator ({@code ncclCommCount},
     * {@code ncclCommGetAsyncError}, and {@code NcclCommunicator.asyncError()}; ns/call, best of 5 runs) and
     * the latency of a one-rank float32 all-reduce, 8 B to 1 MiB (us per call, waited for each time with
     * {@code NcclCommunicator.await}, median of 5 runs).
     */
    private static void nccl(CudaContext context, long calls) {
        if (!Nccl.isAvailable()) {
            System.out.println("NCCL: not available (" + Nccl.unavailabilityCause().getMessage() + ")");
            return;
        }
        System.out.println("NCCL " + Nccl.versionString() + ", one-rank non-blocking communicator");
        Duration timeout = Duration.ofSeconds(60);
        long ncclCalls = Math.max(1, calls / 4);
        try (CudaStream stream = context.createStream();
             NcclCommunicator comm = NcclCommunicator.create(context, 0, 1, Nccl.newUniqueId(), timeout);
             Arena arena = Arena.ofConfined()) {
            MemorySegment handle = comm.handle();
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            System.out.printf(Locale.ROOT, "NCCL call cost (ns/call, best of 5 runs of %d calls):%n", ncclCalls);
            report("ncclCommCount", best(ncclCalls, () -> {
                for (long i = 0; i < ncclCalls; i++) {
                    if (nccl_h.ncclCommCount(handle, out) != 0) {
                        throw new IllegalStateException("ncclCommCount failed");
                    }
                }
            }));
            report("ncclCommGetAsyncError", best(ncclCalls, () -> {
                for (long i = 0; i < ncclCalls; i++) {
                    if (nccl_h.ncclCommGetAsyncError(handle, out) != 0) {
                        throw new IllegalStateException("ncclCommGetAsyncError failed");
                    }
                }
            }));
            report("NcclCommunicator.asyncError", best(ncclCalls, () -> {
                for (long i = 0; i < ncclCalls; i++) {
                    if (comm.asyncError().isPresent()) {
                        throw new IllegalStateException("asynchronous NCCL error");
                    }
                }
            }));
            System.out.println("one-rank all-reduce latency (float32 SUM, out of place; us per call incl. await, "
                    + "median of 5 runs):");
            System.out.printf(Locale.ROOT, "  %10s %10s%n", "size", "us");
            try (DeviceMemory send = context.allocate(MIB); DeviceMemory recv = context.allocate(MIB)) {
                send.fill((byte) 0);
                for (long bytes = 8; bytes <= MIB; bytes *= 2) {
                    long count = bytes / 4;
                    DeviceMemory s = send.slice(0, bytes);
                    DeviceMemory r = recv.slice(0, bytes);
                    int reps = 2000;
                    double[] runs = new double[5];
                    for (int run = 0; run < runs.length; run++) {
                        long t0 = System.nanoTime();
                        for (int i = 0; i < reps; i++) {
                            comm.allReduce(s, r, count, DataType.FLOAT32, ReduceOp.SUM, stream);
                            comm.await(stream, timeout);
                        }
                        runs[run] = (System.nanoTime() - t0) / 1e3 / reps;
                    }
                    Arrays.sort(runs);
                    System.out.printf(Locale.ROOT, "  %8d B %10.2f%n", bytes, runs[runs.length / 2]);
                }
            }
        }
    }
}
