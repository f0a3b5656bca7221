package dev.panamax.bench.kernels;

import dev.panamax.memory.DataType;
import dev.panamax.memory.HostMemory;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.Reductions;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;

/**
 * The accumulate kernel {@code acc[i] = acc[i] op src[i]} over two page-aligned native buffers of
 * {@code bytes} bytes each, against a plain Java loop over the same segments. Compare with the C
 * baseline (scripts/bench/kernel-baseline, same buffers and loop): "buffer GB/s" = bytes / (us/op) / 1000.
 * The fork adds the Vector API module, as applications should (see docs/design/kernels.md); run with
 * {@code -jvmArgsAppend -Dpanamax.kernels.vector=false} for the plain-Java kernels.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"})
public class ReductionBenchmark {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;

    /** Bytes per buffer: 1 MiB (cache-resident) and 256 MiB (memory-bound). */
    @Param({"1048576", "268435456"})
    public long bytes;

    @Param({"FLOAT32"})
    public DataType type;

    @Param({"SUM"})
    public ReduceOp op;

    private Arena arena;
    private MemorySegment acc;
    private MemorySegment src;
    private long count;

    @Setup(Level.Trial)
    public void setup() {
        arena = Arena.ofShared();
        count = bytes / type.byteSize();
        acc = HostMemory.allocate(arena, count * type.byteSize());
        src = HostMemory.allocate(arena, count * type.byteSize());
        for (long i = 0; i < count; i++) {
            type.setFromDouble(src, 0, i, i & 1023); // same data as reduce_bench.c; acc starts at 0
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    /** The Panamax kernel. */
    @Benchmark
    public void kernel() {
        Reductions.accumulate(type, op, acc, 0, src, 0, count);
    }

    /** A plain Java loop over the segments (float32 sum whatever the params say). */
    @Benchmark
    public void naiveLoop() {
        MemorySegment a = acc, s = src;
        long n = bytes / 4;
        for (long i = 0; i < n; i++) {
            a.setAtIndex(F32, i, a.getAtIndex(F32, i) + s.getAtIndex(F32, i));
        }
    }
}
