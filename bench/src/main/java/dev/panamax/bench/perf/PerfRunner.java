package dev.panamax.bench.perf;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.plan.CostModel;
import dev.panamax.collectives.plan.Planner;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import org.HdrHistogram.Histogram;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import javax.management.ObjectName;
import dev.panamax.collectives.Collective;

/**
 * The measurement loop of one rank, the same on every rank. Buffers are allocated once at the
 * largest size and touched before any timing; the sweep runs once per algorithm (each with its
 * own JIT warm-up); per size: warm-up iterations, a barrier, the timed
 * iterations (each also recorded in a latency histogram), then, with checking on, one separate
 * check iteration on known inputs. The per-rank times are combined with a MAX all-reduce and the
 * wrong-element counts with a SUM all-reduce through a communicator split from the measured one
 * (ring all-reduce, whatever algorithm is measured), so every rank ends
 * with the same rows; {@code sink} (rank 0's printer) gets each row once its size is done, short rows a little
 * later ({@link HeldRows}).
 */
public final class PerfRunner {
    private static final long PAGE = 4096;
    /** The JIT warm-up cycles over the sweep's sizes up to this many bytes. */
    private static final long JIT_WARMUP_MAX_BYTES = 64 * 1024;
    /**
     * The rows above {@link #JIT_WARMUP_MAX_BYTES} get their own warm-up over the sizes up to this: messages beyond
     * 64 KiB take other paths (shared memory hands them over by reference, the algorithms change), and a 256 KiB row
     * of 4 ranks on 2 CPUs without it had C2 compiling on both CPUs, 4-5 ms at a time, through its timed calls.
     */
    private static final long JIT_WARMUP_MID_MAX_BYTES = 1024 * 1024;
    /**
     * Calls per row of the JIT warm-up: few enough that the row itself ({@code measure}) runs often enough to be
     * compiled by the JIT's last tier during the warm-up (at 64 it was compiled in the first timed row, 100 ms of
     * a compiler thread on CPUs the ranks need).
     */
    private static final int JIT_WARMUP_ROW_CALLS = 16;
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    /**
     * Calls of the next row's size right after each wait for a quiet JIT: the ranks slept through the wait, and with
     * 4 ranks on 2 CPUs the first row's 20 calls carried one of 100-300 us while they fell back into step (5 rounds of
     * rows of 20: 8 B 16.1 us, max 177, without; 3.04, max 11, with 256 calls; docs/results/performance.md).
     */
    private static final int SETTLE_CALLS = 256;

    private final Communicator comm;
    private final PerfConfig config;
    private final Target target;
    private final PrintStream err;
    private final Histogram histogram = new Histogram(3);
    /** This rank's communicator's JMX bean, for the {@code --waits} columns; null when JMX is off. */
    private ObjectName waitBean;

    /** Measures the collective on host buffers of {@code comm}. */
    public PerfRunner(Communicator comm, PerfConfig config) {
        this(comm, config, null, System.err);
    }

    /**
     * Measures the collective on {@code target} (null: host buffers of {@code comm}), with {@code comm}
     * for the barriers and the statistics; {@code err} is where rank 0 says that a JIT did not go quiet.
     */
    PerfRunner(Communicator comm, PerfConfig config, Target target, PrintStream err) {
        this.comm = comm;
        this.config = config;
        this.target = target;
        this.err = err;
    }

    /**
     * What the measured collective runs on: host buffers of the communicator, or device memory
     * ({@link DeviceTarget}). The same calls on every rank.
     */
    interface Target extends AutoCloseable {
        /** Selects {@code algorithm} (one of the configuration's) for the calls that follow. */
        void select(String algorithm);

        /** The algorithm column for {@code count} under the selected algorithm. */
        String schedule(long count);

        /** The cost model's prediction in microseconds, or null. */
        Double predictUs(String algorithm, long count);

        /** Fills the whole send buffer with this rank's known inputs and zeroes the receive buffer. */
        void fill(CheckData check, int rank);

        /** Runs the collective once on {@code count} elements. */
        void run(long count);

        /** Zeroes the receive buffer's part, runs the collective once, and counts the wrong elements of this rank. */
        long check(CheckData check, int rank, long count);

        @Override
        void close();
    }

    /**
     * Runs the sweep once per algorithm of the configuration; returns the rows (identical on
     * every rank), each labelled with its algorithm and the schedule's description of it.
     */
    public List<Row> run(Consumer<Row> sink) {
        int ranks = comm.size();
        PerfCollective c = config.collective();
        int ts = config.type().byteSize();
        if (config.topology() != null) {
            comm.setTopology(Topology.parse(config.topology()));
        }
        // The statistics and wrong-element counts travel over a communicator of their own with a fixed
        // algorithm, so they do not depend on (or disturb the schedule cache of) the algorithm measured.
        waitBean = WaitCounts.beanOf(comm.rank());
        Communicator stats = comm.split(0, comm.rank());
        try (Arena arena = Arena.ofShared(); Target t = target != null ? target : new HostTarget(comm, config, arena)) {
            // Every schedule of the run is built before any message moves: an algorithm that cannot run
            // some size fails here, on every rank alike, instead of in the middle of the sweep.
            Map<String, List<String>> described = new LinkedHashMap<>();
            Map<String, List<Double>> predicted = new LinkedHashMap<>();
            for (String alg : config.algorithms()) {
                t.select(alg);
                List<String> d = new ArrayList<>();
                List<Double> pr = new ArrayList<>();
                for (long requested : config.sizes()) {
                    long count = c.count(requested, ts, ranks);
                    d.add(t.schedule(count));
                    pr.add(t.predictUs(alg, count));
                }
                described.put(alg, d);
                predicted.put(alg, pr);
            }
            stats.setAlgorithm(Collective.ALL_REDUCE, "ring");
            Buffers b = new Buffers(t, statsBuffer(arena, stats, 16 * Double.BYTES),
                    statsBuffer(arena, stats, Long.BYTES), stats);
            CheckData check = new CheckData(c, config.type(), config.op(), ranks, config.root(), config.wireType());
            List<Row> rows = new ArrayList<>();
            HeldRows held = new HeldRows(sink != null ? sink : row -> { }, config.iters());
            for (String alg : config.algorithms()) {
                t.select(alg);
                // Known inputs everywhere (their pattern does not depend on the size), and every page touched;
                // again for each algorithm, so that one that wrote into its send buffer cannot spoil the next one's
                // check.
                t.fill(check, comm.rank());
                warmUp(b, check);
                List<String> d = described.get(alg);
                boolean midWarmed = false;
                for (int i = 0; i < config.sizes().size(); i++) {
                    if (!midWarmed && config.sizes().get(i) > JIT_WARMUP_MAX_BYTES) {
                        warmUpMidSizes(b, check);
                        midWarmed = true;
                    }
                    Row row = measure(b, check, c.count(config.sizes().get(i), ts, ranks), config.warmup(),
                            config.iters(), config.straggleNanos())
                            .withAlgorithm(alg, d.get(i)).withPrediction(predicted.get(alg).get(i));
                    rows.add(row);
                    held.add(row);
                }
            }
            comm.barrier();
            held.flush();
            return rows;
        } finally {
            stats.close();
        }
    }

    /** Host buffers: from {@code Communicator.allocate}, or plain {@code Arena} ones with {@code --user-buffers}. */
    private static final class HostTarget implements Target {
        private final Communicator comm;
        private final PerfConfig config;
        private final MemorySegment send;
        private final MemorySegment recv;

        HostTarget(Communicator comm, PerfConfig config, Arena arena) {
            this.comm = comm;
            this.config = config;
            long[] max = config.maxBufferBytes(comm.size());
            int ts = config.type().byteSize();
            this.send = buffer(arena, Math.max(max[0], ts));
            this.recv = buffer(arena, Math.max(max[1], ts));
        }

        private MemorySegment buffer(Arena arena, long bytes) {
            return config.userBuffers() ? arena.allocate(bytes, PAGE) : comm.allocate(bytes);
        }

        @Override
        public void select(String algorithm) {
            comm.setAlgorithm(config.collective().api(), algorithm);
        }

        @Override
        public String schedule(long count) {
            if (config.wireType() != null) {
                // A wire-type all-reduce is an all-to-all and an all-gather of its own, whatever the all-reduce's.
                return "all-to-all+all-gather";
            }
            return comm.plannedAlgorithm(config.collective().api(), count, config.type(), config.root());
        }

        @Override
        public Double predictUs(String algorithm, long count) {
            PerfCollective c = config.collective();
            return PerfRunner.predictUs(algorithm, new Problem(c.api(), 0, comm.size(), count, config.type().byteSize(),
                    c.rooted() ? config.root() : 0, comm.topology()));
        }

        @Override
        public void fill(CheckData check, int rank) {
            check.fill(send, rank, send.byteSize() / config.type().byteSize());
            recv.fill((byte) 0);
        }

        @Override
        public void run(long count) {
            if (config.wireType() != null) {
                comm.allReduce(send, recv, count, config.type(), config.wireType(), config.op());
            } else if (config.preMulSum()) {
                config.collective().runPreMulSum(comm, send, recv, count, config.type(), config.root());
            } else {
                config.collective().run(comm, send, recv, count, config.type(), config.op(), config.root());
            }
        }

        @Override
        public long check(CheckData check, int rank, long count) {
            long recvBytes = config.collective().recvBytes(count, config.type().byteSize(), comm.size());
            recv.asSlice(0, recvBytes).fill((byte) 0);
            run(count);
            return check.countWrong(recv, rank, count);
        }

        @Override
        public void close() {
            // the buffers belong to the arena or the communicator
        }
    }

    /** The cost model's time for {@code alg} (the planner's for auto) in microseconds; null without a model. */
    static Double predictUs(String alg, Problem p) {
        try {
            double s = alg.equals("auto") ? Planner.choose(p).predictedSeconds() : CostModel.predict(alg, p).seconds();
            return Double.isFinite(s) ? s * 1e6 : null;
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private record Buffers(Target target, MemorySegment stats, MemorySegment wrongs, Communicator statsComm) {
    }

    /**
     * Before the sweep, the JVM must have compiled the code the sweep runs, with every path it
     * takes already profiled: a path first taken mid-sweep (another size regime, the check, the
     * statistics all-reduce in another type, the barrier, printing) deoptimizes the compiled code,
     * and the next ~10^4 calls run interpreted, far longer than nccl-tests' 20 iterations. So: one
     * quiet pass over the whole sweep (every size, check and statistics included), then
     * {@code --jit-warmup} iterations cycling over the small sizes with the same per-size work
     * every {@value #JIT_WARMUP_ROW_CALLS} iterations, a quarter of them through the row's untimed warm-up loop,
     * then a wait for the JIT to go quiet, then {@link #SETTLE_CALLS} calls of the first size (no more than
     * {@code --jit-warmup}). Counts, not time: every rank does the same calls.
     */
    private void warmUp(Buffers b, CheckData check) {
        PerfCollective c = config.collective();
        int ts = config.type().byteSize();
        int ranks = comm.size();
        for (long requested : config.sizes()) {
            measure(b, check, c.count(requested, ts, ranks), 1, 2, 0).format(true);
        }
        List<Long> small = warmUpSizes(config.sizes(), 0, JIT_WARMUP_MAX_BYTES);
        // Per size: a path that only some sizes take (the vector loop of the reduction kernel, from 64 bytes of
        // float32) must reach the JIT's last tier here too, not in the first timed row that takes it.
        cycle(b, check, small, (long) config.jitWarmup() * small.size());
        awaitQuietJitThenSettle(b, check, small.get(0));
    }

    /**
     * Right before the first row above {@link #JIT_WARMUP_MAX_BYTES}: a quarter of {@code --jit-warmup} iterations
     * cycling over the sweep's sizes up to {@link #JIT_WARMUP_MID_MAX_BYTES} above it, then the wait for the JIT to go
     * quiet and {@link #SETTLE_CALLS} calls of the first of those sizes (1 MiB alone where the sweep has none there,
     * {@link #warmUpSizes}). Not before the small rows: with it there, 4 ranks on 2 CPUs measured their 8 B-32 KiB
     * rows 1.2-1.5x slower in 3 runs of 4 (and in 0 of 4 without), a state of the run that the small warm-up after it
     * did not undo.
     */
    private void warmUpMidSizes(Buffers b, CheckData check) {
        List<Long> mid = warmUpSizes(config.sizes(), JIT_WARMUP_MAX_BYTES + 1, JIT_WARMUP_MID_MAX_BYTES);
        if (mid.isEmpty() || config.jitWarmup() == 0) {
            return;
        }
        cycle(b, check, mid, config.jitWarmup() / 4);
        awaitQuietJitThenSettle(b, check, mid.get(0));
    }

    /**
     * The sizes of {@code sweep} from {@code minBytes} to {@code maxBytes} that a JIT warm-up cycles over; where the
     * sweep has none there but larger ones, {@code maxBytes} alone (the buffers hold it): the paths of those larger
     * messages must be profiled all the same (a 16 MiB row after a warm-up of 64 KiB alone measured 3-5 ms a call
     * instead of 1.5 while the shared-memory send path, its by-reference branch never profiled, was compiled again).
     */
    static List<Long> warmUpSizes(List<Long> sweep, long minBytes, long maxBytes) {
        List<Long> in = sweep.stream().filter(bytes -> bytes >= minBytes && bytes <= maxBytes).toList();
        if (in.isEmpty() && sweep.stream().anyMatch(bytes -> bytes > maxBytes)) {
            return List.of(maxBytes);
        }
        return in;
    }

    /**
     * Waits for every rank's JIT to go quiet, then makes {@link #SETTLE_CALLS} calls (no more than
     * {@code --jit-warmup}) of {@code bytes}, the next row's size, so that ranks that slept through the wait are back
     * in step before its timed calls.
     */
    private void awaitQuietJitThenSettle(Buffers b, CheckData check, long bytes) {
        JitActivity.awaitQuiet(b.statsComm, b.wrongs, config.jitQuietMaxNanos(), err);
        comm.barrier();
        cycle(b, check, List.of(bytes), Math.min(SETTLE_CALLS, config.jitWarmup()));
    }

    /** {@code iterations} calls cycling over {@code sizes}, {@value #JIT_WARMUP_ROW_CALLS} per size in turn. */
    private void cycle(Buffers b, CheckData check, List<Long> sizes, long iterations) {
        PerfCollective c = config.collective();
        for (long i = 0; i < iterations && !sizes.isEmpty(); i += JIT_WARMUP_ROW_CALLS) {
            long count = c.count(sizes.get((int) (i / JIT_WARMUP_ROW_CALLS % sizes.size())), config.type().byteSize(),
                    comm.size());
            // Some through the row's own warm-up loop: compiled while it never ran, it would deoptimize at the first
            // row and the timed calls that follow would share the CPUs with its recompilation.
            int calls = (int) Math.min(JIT_WARMUP_ROW_CALLS, iterations - i);
            int untimed = calls / 4;
            measure(b, check, count, untimed, calls - untimed, 0);
        }
    }

    /**
     * One row: warm-up iterations, a barrier, the timed iterations, the check, the statistics across ranks. The last
     * rank sleeps {@code straggleNanos} before each call (none when 0).
     */
    private Row measure(Buffers b, CheckData check, long count, int warmup, int iters, long straggleNanos) {
        PerfCollective c = config.collective();
        DataType type = config.type();
        ReduceOp op = config.op();
        int ts = type.byteSize();
        int ranks = comm.size();
        long sleepNanos = straggleNanos > 0 && comm.rank() == ranks - 1 ? straggleNanos : 0;
        for (int i = 0; i < warmup; i++) {
            call(b.target, count, sleepNanos);
        }
        // The wait counts come over JMX, a read that runs interpreted (twice a row) and took 3-90 us, longer on one
        // rank than on another: read after the barrier, it made the first timed call wait that long for the peer.
        // The barrier that lines the ranks up is the statistics communicator's, so that its waits are not counted.
        histogram.reset();
        WaitCounts waitsBefore = WaitCounts.read(waitBean);
        b.statsComm.barrier();
        long cpuBefore = THREADS.getCurrentThreadCpuTime();
        // The time column: the timed calls as a whole, as nccl-tests and the Open MPI baseline time theirs. A clock
        // read and a histogram entry per call cost 30-40 ns on the development machine (kvm-clock), which an 8-byte
        // all-reduce of 0.5 us would carry as 7% more.
        long start = System.nanoTime();
        for (int i = 0; i < iters; i++) {
            call(b.target, count, sleepNanos);
        }
        double timeUs = (System.nanoTime() - start) / 1e3 / Math.max(1, iters);
        double cpuUs = (THREADS.getCurrentThreadCpuTime() - cpuBefore) / 1e3 / Math.max(1, iters);
        // The distribution columns: as many calls again, each timed on its own. The wait counts are read after these
        // (a read between the two loops would make the first call here wait for the slowest rank's read).
        long last = System.nanoTime();
        for (int i = 0; i < iters; i++) {
            call(b.target, count, sleepNanos);
            long now = System.nanoTime();
            histogram.recordValue(now - last);
            last = now;
        }
        WaitCounts waitsAfter = WaitCounts.read(waitBean);
        long wrong = -1;
        if (config.check()) {
            b.wrongs.set(ValueLayout.JAVA_LONG, 0, b.target.check(check, comm.rank(), count));
            b.statsComm.allReduce(b.wrongs, 1, DataType.INT64, ReduceOp.SUM);
            wrong = b.wrongs.get(ValueLayout.JAVA_LONG, 0);
        }
        // -1 where this rank's counts are unknown (JMX off): any such rank drops the columns
        double[] waits = waitsBefore == null || waitsAfter == null ? new double[] {-1, -1, -1, -1, -1, -1, -1, -1, -1}
                : waitsAfter.perCallSince(waitsBefore, 2L * iters);
        double[] mine = {timeUs, histogram.getMinValue() / 1e3, histogram.getValueAtPercentile(50) / 1e3,
                histogram.getValueAtPercentile(99) / 1e3, histogram.getMaxValue() / 1e3, waits[0], -waits[1], waits[2],
                waits[3], waits[4], waits[5], waits[6], cpuUs, waits[7]};
        MemorySegment.copy(mine, 0, b.stats, ValueLayout.JAVA_DOUBLE, 0, mine.length);
        b.statsComm.allReduce(b.stats, mine.length, DataType.FLOAT64, ReduceOp.MAX);
        double[] all = b.stats.asSlice(0, mine.length * Double.BYTES).toArray(ValueLayout.JAVA_DOUBLE);
        // the share served spinning goes in negated, so that the maximum gives the smallest share
        Row.Waits w = waits[0] < 0 ? null : new Row.Waits(all[5], -all[6], all[7], all[8], all[9], all[10],
                all[11], all[12], all[13]);
        return Row.of(c, count, ts, type.canonicalName(), config.redopName(), c.rooted() ? config.root() : -1, ranks,
                all[0], wrong, all[1], all[2], all[3], all[4]).withWaits(w);
    }

    /** One call of a row, after sleeping {@code sleepNanos} first (the straggling rank's part; none when 0). */
    private static void call(Target target, long count, long sleepNanos) {
        if (sleepNanos > 0) {
            LockSupport.parkNanos(sleepNanos);
        }
        target.run(count);
    }

    private MemorySegment statsBuffer(Arena arena, Communicator owner, long bytes) {
        return config.userBuffers() ? arena.allocate(bytes, PAGE) : owner.allocate(bytes);
    }

}
