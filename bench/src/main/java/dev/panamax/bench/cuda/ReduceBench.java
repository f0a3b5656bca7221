package dev.panamax.bench.cuda;

import dev.panamax.bindings.cuda.cuda_h;
import dev.panamax.cuda.Cuda;
import dev.panamax.cuda.CudaContext;
import dev.panamax.cuda.CudaDevice;
import dev.panamax.cuda.CudaEvent;
import dev.panamax.cuda.CudaStream;
import dev.panamax.cuda.DeviceMemory;
import dev.panamax.cuda.ReductionKernels;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Measures the bandwidth of the GPU reduce kernel ({@link ReductionKernels#reduce}, {@code inout[i] += in[i]})
 * next to a device-to-device copy of the same size on one GPU, from 1 MiB to 256 MiB per operand, timed with
 * CUDA events over many back-to-back launches on one stream. A reduce moves 3 x bytes (reads inout and in,
 * writes inout), a copy 2 x bytes (one read, one write); GB/s = 1e9 bytes/s. Run with
 * {@code --enable-native-access=ALL-UNNAMED}; see docs/design/gpu-kernels.md.
 */
public final class ReduceBench {
    private static final long MIB = 1L << 20;

    private ReduceBench() {
    }

    public static void main(String[] args) {
        int ordinal = 0;
        long minMib = 1;
        long maxMib = 256;
        ReduceOp op = ReduceOp.SUM;
        List<DataType> types = List.of(DataType.FLOAT32, DataType.BFLOAT16);
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--help", "-h" -> {
                    System.out.println("""
                            usage: ReduceBench [--device N] [--min-mib M] [--max-mib M] [--op OP] [--types T,T...]
                              --device N    the CUDA device ordinal (default 0)
                              --min-mib M   the smallest operand, in MiB (default 1); sizes double up to --max-mib
                              --max-mib M   the largest operand, in MiB (default 256)
                              --op OP       sum, prod, min, max or avg (avg launches sum; default sum)
                              --types T,... data types (default float32,bfloat16)
                            Prints GB/s (1e9 bytes/s) of the reduce kernel (3 x bytes per launch) and of a
                            device-to-device copy of the same size (2 x bytes), and their ratio.""");
                    return;
                }
                case "--device" -> ordinal = Integer.parseInt(value(args, ++i));
                case "--min-mib" -> minMib = Long.parseLong(value(args, ++i));
                case "--max-mib" -> maxMib = Long.parseLong(value(args, ++i));
                case "--op" -> op = ReduceOp.parse(value(args, ++i));
                case "--types" -> {
                    List<DataType> parsed = new ArrayList<>();
                    for (String t : value(args, ++i).split(",")) {
                        parsed.add(DataType.parse(t.strip()));
                    }
                    types = parsed;
                }
                default -> {
                    System.err.println("ReduceBench: unknown argument '" + args[i] + "' (see --help)");
                    System.exit(2);
                }
            }
        }
        if (minMib < 1 || maxMib < minMib) {
            System.err.println("ReduceBench: need 1 <= --min-mib <= --max-mib");
            System.exit(2);
        }
        if (!Cuda.isAvailable()) {
            System.err.println("ReduceBench: CUDA is not available: " + Cuda.unavailabilityCause().getMessage());
            System.exit(1);
        }
        CudaDevice device = Cuda.device(ordinal);
        int version = Cuda.driverVersion();
        System.out.printf(Locale.ROOT,
                "device %d: %s (compute capability %d.%d, %d multiprocessors), driver CUDA %d.%d%n",
                ordinal, device.name(), device.computeCapabilityMajor(), device.computeCapabilityMinor(),
                device.attribute(cuda_h.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT()), version / 1000,
                        version % 1000 / 10);
        try (CudaContext context = device.retainPrimaryContext()) {
            long t0 = System.nanoTime();
            ReductionKernels kernels = ReductionKernels.load(context);
            System.out.printf(Locale.ROOT, "module load (cuModuleLoadData and 40 cuModuleGetFunction): %.1f ms%n",
                    (System.nanoTime() - t0) / 1e6);
            run(context, kernels, op, types, minMib * MIB, maxMib * MIB);
        }
    }

    private static String value(String[] args, int i) {
        if (i >= args.length) {
            System.err.println("ReduceBench: " + args[i - 1] + " needs a value (see --help)");
            System.exit(2);
        }
        return args[i];
    }

    private static void run(CudaContext context, ReductionKernels kernels, ReduceOp op, List<DataType> types,
                            long minBytes, long maxBytes) {
        System.out.printf(Locale.ROOT, "%s kernel vs device-to-device copy (GB/s; reduce 3 x bytes, copy 2 x bytes per "
                + "launch; CUDA events on one stream):%n", op.name().toLowerCase(Locale.ROOT));
        System.out.printf(Locale.ROOT, "  %-9s %10s %9s %12s %12s %8s%n", "type", "operand", "launches", "reduce",
                "copy", "ratio");
        try (CudaStream stream = context.createStream();
             CudaEvent start = context.createEvent(true);
             CudaEvent end = context.createEvent(true);
             DeviceMemory inout = context.allocate(maxBytes);
             DeviceMemory in = context.allocate(maxBytes);
             DeviceMemory copy = context.allocate(maxBytes)) {
            // Small finite values; the sums grow but stay finite or reach infinity: the speed is the same.
            inout.fill((byte) 0x3c);
            in.fill((byte) 0x3c);
            for (DataType type : types) {
                for (long size = minBytes; size <= maxBytes; size *= 2) {
                    long count = size / type.byteSize();
                    long bytes = count * type.byteSize();
                    DeviceMemory x = inout.slice(0, bytes);
                    DeviceMemory y = in.slice(0, bytes);
                    DeviceMemory z = copy.slice(0, bytes);
                    // About 32 GiB of traffic per measurement, at least 40 launches.
                    int launches = (int) Math.max(40, Math.min(10000, (32L << 30) / (3 * bytes)));
                    double reduceSeconds = seconds(launches, stream, start, end,
                            () -> kernels.reduce(op, type, x, y, count, stream));
                    double copySeconds = seconds(launches, stream, start, end, () -> z.copyFromAsync(y, stream));
                    double reduceRate = 3.0 * bytes * launches / reduceSeconds / 1e9;
                    double copyRate = 2.0 * bytes * launches / copySeconds / 1e9;
                    System.out.printf(Locale.ROOT, "  %-9s %6d MiB %9d %12.1f %12.1f %8.2f%n", type.canonicalName(),
                            bytes / MIB, launches, reduceRate, copyRate, reduceRate / copyRate);
                }
            }
        }
    }

    /** Seconds for {@code launches} back-to-back runs of {@code work}, after two untimed ones. */
    private static double seconds(int launches, CudaStream stream, CudaEvent start, CudaEvent end, Runnable work) {
        work.run();
        work.run();
        stream.synchronize();
        start.record(stream);
        for (int i = 0; i < launches; i++) {
            work.run();
        }
        end.record(stream);
        end.synchronize();
        return end.elapsedMillisSince(start) / 1e3;
    }
}
