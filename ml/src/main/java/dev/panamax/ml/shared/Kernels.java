package dev.panamax.ml.shared;

import dev.panamax.memory.DataType;
import dev.panamax.memory.Reductions;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;

/**
 * Element-wise work of the shared variables, split into chunks that run in parallel on one pool
 * with a thread per core (the process's tasks commit whole vectors, so the parallelism has to
 * come from within each vector).
 */
final class Kernels {
    /** Below this many bytes per chunk the hand-off costs more than it saves. */
    static final long MIN_CHUNK_BYTES = 256 * 1024;

    private static final ForkJoinPool POOL = new ForkJoinPool(Runtime.getRuntime().availableProcessors(), pool -> {
        var t = ForkJoinPool.defaultForkJoinWorkerThreadFactory.newThread(pool);
        t.setName("panamax-shared-" + t.getPoolIndex());
        t.setDaemon(true);
        return t;
    }, null, false);

    private Kernels() {
    }

    static void execute(Runnable task) {
        POOL.execute(task);
    }

    /** {@code dst = src}. */
    static void copy(MemorySegment dst, MemorySegment src) {
        long bytes = src.byteSize();
        inChunks(bytes, 1, (from, to) -> MemorySegment.copy(src, from, dst, from, to - from));
    }

    /** {@code acc[i] = reduction(acc[i], src[i])} for every element. */
    static void fold(SharedReduction reduction, MemorySegment acc, MemorySegment src) {
        fold(reduction, acc, acc, src);
    }

    /** {@code dst[i] = reduction(a[i], b[i])} for every element of {@code b}. */
    static void fold(SharedReduction reduction, MemorySegment dst, MemorySegment a, MemorySegment b) {
        DataType type = reduction.type();
        int size = type.byteSize();
        inChunks(b.byteSize(), size, (from, to) -> {
            long count = (to - from) / size;
            switch (reduction) {
                case SharedReduction.Operator op ->
                        Reductions.reduce(type, op.op(), dst, from, a, from, b, from, count);
                case SharedReduction.DoubleFunction f -> {
                    var fn = f.fn();
                    for (long at = from; at < to; at += Double.BYTES) {
                        dst.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, at, fn.applyAsDouble(
                                a.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, at),
                                        b.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, at)));
                    }
                }
                case SharedReduction.FloatFunction f -> {
                    var fn = f.fn();
                    for (long at = from; at < to; at += Float.BYTES) {
                        dst.set(ValueLayout.JAVA_FLOAT_UNALIGNED, at, fn.applyAsFloat(
                                a.get(ValueLayout.JAVA_FLOAT_UNALIGNED, at),
                                        b.get(ValueLayout.JAVA_FLOAT_UNALIGNED, at)));
                    }
                }
            }
        });
    }

    private interface Range {
        void run(long fromByte, long toByte);
    }

    /** Runs {@code body} over {@code [0, bytes)} cut at multiples of {@code unit}, in parallel when large. */
    private static void inChunks(long bytes, int unit, Range body) {
        int parallelism = POOL.getParallelism();
        long chunks = Math.min(parallelism, bytes / MIN_CHUNK_BYTES);
        if (chunks <= 1) {
            body.run(0, bytes);
            return;
        }
        long units = bytes / unit;
        List<ForkJoinTask<?>> tasks = new ArrayList<>();
        for (long c = 0; c < chunks; c++) {
            long from = units * c / chunks * unit;
            long to = units * (c + 1) / chunks * unit;
            tasks.add(ForkJoinTask.adapt(() -> body.run(from, to)));
        }
        if (ForkJoinTask.inForkJoinPool() && ForkJoinTask.getPool() == POOL) {
            ForkJoinTask.invokeAll(tasks);
        } else {
            // Called from the coordinator's thread: hand the chunks to the pool and wait.
            tasks.forEach(POOL::execute);
            tasks.forEach(ForkJoinTask::join);
        }
    }
}
