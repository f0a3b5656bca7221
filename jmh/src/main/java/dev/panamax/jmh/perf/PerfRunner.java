package dev.panamax.jmh.perf;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import org.HdrHistogram.Histogram;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * The measurement loop of one rank, the same on every rank. Buffers are allocated once at the
 * largest size and touched before any timing; per size: warm-up iterations, a barrier, the timed
 * iterations (each also recorded in a latency histogram), then, with checking on, one separate
 * check iteration on known inputs. The per-rank times are combined with a MAX all-reduce and the
 * wrong-element counts with a SUM all-reduce through the communicator itself, so every rank ends
 * with the same rows; {@code sink} (rank 0's printer) gets each row as soon as its size is done.
 */
public final class PerfRunner {
    private static final long PAGE = 4096;

    private final Communicator comm;
    private final PerfConfig config;

    public PerfRunner(Communicator comm, PerfConfig config) {
        this.comm = comm;
        this.config = config;
    }

    /** Runs the sweep; returns the rows (identical on every rank). */
    public List<Row> run(Consumer<Row> sink) {
        int ranks = comm.size();
        int rank = comm.rank();
        Collective c = config.collective();
        DataType type = config.type();
        ReduceOp op = config.op();
        int ts = type.byteSize();
        long[] max = config.maxBufferBytes(ranks);
        List<Row> rows = new ArrayList<>();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment send = buffer(arena, Math.max(max[0], ts));
            MemorySegment recv = buffer(arena, Math.max(max[1], ts));
            MemorySegment stats = buffer(arena, 8 * Double.BYTES);
            MemorySegment wrongs = buffer(arena, Long.BYTES);
            CheckData check = new CheckData(c, type, op, ranks, config.root());
            // Known inputs everywhere (their pattern does not depend on the size), and every page touched.
            check.fill(send, rank, send.byteSize() / ts);
            recv.fill((byte) 0);
            Histogram histogram = new Histogram(3);
            // JIT warm-up at a small size (and once at the largest, which touches every page the sweep uses).
            long small = c.count(Math.min(4096, config.sizes().getLast()), ts, ranks);
            for (int i = 0; i < config.jitWarmup(); i++) {
                c.run(comm, send, recv, small, type, op, config.root());
            }
            c.run(comm, send, recv, c.count(config.sizes().getLast(), ts, ranks), type, op, config.root());
            comm.barrier();
            for (long requested : config.sizes()) {
                long count = c.count(requested, ts, ranks);
                for (int i = 0; i < config.warmup(); i++) {
                    c.run(comm, send, recv, count, type, op, config.root());
                }
                comm.barrier();
                histogram.reset();
                long start = System.nanoTime();
                long last = start;
                for (int i = 0; i < config.iters(); i++) {
                    c.run(comm, send, recv, count, type, op, config.root());
                    long now = System.nanoTime();
                    histogram.recordValue(now - last);
                    last = now;
                }
                double timeUs = (last - start) / 1e3 / config.iters();
                long wrong = -1;
                if (config.check()) {
                    long recvBytes = c.recvBytes(count, ts, ranks);
                    recv.asSlice(0, recvBytes).fill((byte) 0);
                    c.run(comm, send, recv, count, type, op, config.root());
                    wrongs.set(ValueLayout.JAVA_LONG, 0, check.countWrong(recv, rank, count));
                    comm.allReduce(wrongs, 1, DataType.INT64, ReduceOp.SUM);
                    wrong = wrongs.get(ValueLayout.JAVA_LONG, 0);
                }
                double[] mine = {timeUs, histogram.getMinValue() / 1e3, histogram.getValueAtPercentile(50) / 1e3,
                        histogram.getValueAtPercentile(99) / 1e3, histogram.getMaxValue() / 1e3};
                MemorySegment.copy(mine, 0, stats, ValueLayout.JAVA_DOUBLE, 0, mine.length);
                comm.allReduce(stats, mine.length, DataType.FLOAT64, ReduceOp.MAX);
                double[] all = stats.asSlice(0, mine.length * Double.BYTES).toArray(ValueLayout.JAVA_DOUBLE);
                Row row = Row.of(c, count, ts, type.canonicalName(), config.redopName(), c.rooted() ? config.root() : -1, ranks,
                        all[0], wrong, all[1], all[2], all[3], all[4]);
                rows.add(row);
                if (sink != null) {
                    sink.accept(row);
                }
            }
            comm.barrier();
        }
        return rows;
    }

    private MemorySegment buffer(Arena arena, long bytes) {
        return config.userBuffers() ? arena.allocate(bytes, PAGE) : comm.allocate(bytes);
    }
}
