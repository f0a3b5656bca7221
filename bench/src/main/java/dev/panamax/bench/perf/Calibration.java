package dev.panamax.bench.perf;

import dev.panamax.collectives.plan.LinearFit.Line;
import dev.panamax.collectives.plan.LinearFit;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import dev.panamax.collectives.Collective;
import java.util.Arrays;
import javax.management.ObjectName;

/**
 * {@code --calibrate}: measures what the cost models need, on every rank alike; rank 0 prints.
 * <ul>
 * <li>per transport in use (as seen from rank 0): a ping-pong between rank 0 and the first peer
 *     reached over it, half the round trip per size;</li>
 * <li>the ring all-reduce over all ranks per size (the slowest rank's average);</li>
 * <li>k = 1, 2, 4 all-reduces run together with {@code allReduceConcurrently}, for the contention
 *     factor gamma: T_k / T_1 = 1 + gamma (k - 1), so 0 means they overlap perfectly and 1 that
 *     they take turns.</li>
 * </ul>
 * Every time is a median over the {@code -n} iterations (robust on a busy machine), the slowest
 * rank's where several ranks time. Each series is fitted with t = alpha + beta * m (ordinary
 * least squares over the sizes). With {@code --waits}, how the two ends of each ping-pong waited, per round trip (the
 * communicators' wait counts, as the sweep's {@code --waits} columns).
 */
final class Calibration {
    /** Transports whose peers share the host of rank 0: the innermost level of a suggested topology. */
    private static final Set<String> SAME_HOST = Set.of("local", "shm", "self");
    /** Largest size of the gamma measurement. */
    private static final long GAMMA_MAX_BYTES = 8L << 20;
    /** The largest size the JIT warm-up's ping-pongs cycle over, as the sweep's first warm-up. */
    private static final long JIT_WARMUP_MAX_BYTES = 64 << 10;
    /**
     * Calls per timed loop in the JIT warm-up: the loops that time the series run there too, so that the JIT compiles
     * them with their loop profiled. With one ping-pong per call, the first call of many (the {@code -w} warm-up)
     * took a branch of the median, then computed in the same method, that the compiled code had never seen, which
     * threw it out, and the timed ping-pongs ran in the interpreter while the JIT compiled them again (a JIT log in
     * the RDMA VM; docs/results/performance.md).
     */
    private static final int JIT_WARMUP_ROW_CALLS = 16;
    private static final int[] KS = {1, 2, 4};
    /** The wait counts reported per ping-pong end ({@link #bothEnds}). */
    private static final int WAIT_COLUMNS = 7;

    private final Communicator comm;
    private final PerfConfig config;
    private final PrintStream out;
    /** Where rank 0 says that a JIT did not go quiet. */
    private final PrintStream err;
    /** Whether to report the ping-pongs' wait counts ({@code --waits}). */
    private final boolean waits;

    /** {@code out} is rank 0's printer, null on the other ranks. */
    Calibration(Communicator comm, PerfConfig config, PrintStream out, PrintStream err, boolean waits) {
        this.comm = comm;
        this.config = config;
        this.out = out;
        this.err = err;
        this.waits = waits;
    }

    void run(String transport) {
        int n = comm.size();
        int rank = comm.rank();
        List<Long> sizes = config.sizes().stream().filter(s -> s > 0).toList();
        try (Arena arena = Arena.ofShared()) {
            long max = sizes.isEmpty() ? 8 : sizes.getLast();
            MemorySegment a = buffer(arena, Math.max(max, 8));
            MemorySegment b = buffer(arena, Math.max(max, 8));
            MemorySegment stat = buffer(arena, 64);
            a.fill((byte) 1);
            b.fill((byte) 0);

            // Which peers rank 0 ping-pongs with: the first reached over each transport; every rank learns them from
            // rank 0.
            MemorySegment peerList = buffer(arena, 4L * (n + 1));
            Map<String, Integer> byKind = new LinkedHashMap<>();
            if (rank == 0) {
                for (int p = 1; p < n; p++) {
                    byKind.putIfAbsent(comm.transportTo(p), p);
                }
                peerList.set(ValueLayout.JAVA_INT, 0, byKind.size());
                int i = 1;
                for (int p : byKind.values()) {
                    peerList.set(ValueLayout.JAVA_INT, 4L * i++, p);
                }
            }
            comm.setAlgorithm(Collective.BROADCAST, "ring");
            comm.setAlgorithm(Collective.ALL_REDUCE, "ring");
            comm.broadcast(peerList, n + 1, DataType.INT32, 0);
            int[] peers = new int[peerList.get(ValueLayout.JAVA_INT, 0)];
            for (int i = 0; i < peers.length; i++) {
                peers[i] = peerList.get(ValueLayout.JAVA_INT, 4L * (i + 1));
            }

            // The JIT compiles the small-message paths first, as in the sweep: ping-pongs cycling over the sizes up to
            // 64 KiB, so that a branch only some sizes take (an RDMA send inline or not) is profiled before the last
            // tier compiles, rather than deoptimized and compiled again in the first row that takes it.
            int jit = Math.min(config.jitWarmup(), 20_000);
            List<Long> small = sizes.stream().filter(s -> s <= JIT_WARMUP_MAX_BYTES).toList();
            if (small.isEmpty()) {
                small = List.of(8L);
            }
            long[] row = new long[JIT_WARMUP_ROW_CALLS];
            for (int peer : peers) {
                int reps = jit / Math.max(1, peers.length);
                for (int i = 0; i < reps; i += row.length) {
                    pingPong(a, b, small.get(i / row.length % small.size()), peer, row);
                }
            }
            for (int i = 0; i < jit; i += row.length) {
                timeAllReduces(a, b, 2, row);
            }
            if (jit > 0) {
                // as the sweep: a compiler thread at work takes a rank's CPU
                JitActivity.awaitQuiet(comm, stat, config.jitQuietMaxNanos(), err);
            }
            comm.barrier();

            double[][] pp = new double[peers.length][sizes.size()];
            double[][][] ppWaits = new double[peers.length][sizes.size()][];
            ObjectName bean = waits ? WaitCounts.beanOf(rank) : null;
            MemorySegment waitStat = buffer(arena, 2L * WAIT_COLUMNS * Double.BYTES);
            for (int k = 0; k < peers.length; k++) {
                for (int s = 0; s < sizes.size(); s++) {
                    pingPong(a, b, sizes.get(s), peers[k], new long[config.warmup()]);
                    comm.barrier();
                    long[] laps = new long[config.iters()];
                    WaitCounts before = WaitCounts.read(bean);
                    // half a round trip; 0 on ranks that take no part
                    pp[k][s] = pingPong(a, b, sizes.get(s), peers[k], laps) ? median(laps) / 1e9 / 2 : 0;
                    WaitCounts after = WaitCounts.read(bean);
                    if (waits) {
                        ppWaits[k][s] = bothEnds(waitStat, peers[k], before, after);
                    }
                    comm.barrier();
                }
            }
            double[] ar = new double[sizes.size()];
            for (int s = 0; s < sizes.size(); s++) {
                ar[s] = allReduce(a, b, stat, sizes.get(s) / 4);
            }
            long gammaBytes = 0;
            for (long s : sizes) {
                if (s <= GAMMA_MAX_BYTES && s >= 4) {
                    gammaBytes = s;
                }
            }
            double[] tk = gammaBytes == 0 ? null : contention(arena, stat, gammaBytes / 4);
            comm.barrier();
            if (out != null) {
                String[] kinds = new String[peers.length];
                for (int k = 0; k < peers.length; k++) {
                    kinds[k] = comm.transportTo(peers[k]);
                }
                report(transport, sizes, peers, kinds, pp, ar, gammaBytes, tk);
                if (waits) {
                    reportWaits(sizes, peers, kinds, ppWaits);
                }
            }
        }
    }

    /**
     * Round trips in which rank 0 sends {@code bytes} to {@code peer} and gets them back, one per element of {@code
     * laps}, which gets each round trip's nanoseconds; whether this rank took part (rank 0 and {@code peer} do). One
     * clock reading per round trip, each lap the time between two of them, as perftest's {@code ib_send_lat} times its
     * iterations: where a clock read is costly (a virtual machine's HPET clock source: about 1 us), a second reading
     * would add its cost to every lap. The median is the caller's, outside this loop, whose compiled code it would
     * otherwise share.
     */
    private boolean pingPong(MemorySegment a, MemorySegment b, long bytes, int peer, long[] laps) {
        int rank = comm.rank();
        if (rank != 0 && rank != peer) {
            return false;
        }
        long t0 = System.nanoTime();
        for (int i = 0; i < laps.length; i++) {
            if (rank == 0) {
                comm.send(a, bytes, DataType.UINT8, peer);
                comm.recv(b, bytes, DataType.UINT8, peer);
            } else {
                comm.recv(b, bytes, DataType.UINT8, 0);
                comm.send(b, bytes, DataType.UINT8, 0);
            }
            long t1 = System.nanoTime();
            laps[i] = t1 - t0;
            t0 = t1;
        }
        return true;
    }

    /**
     * Rank 0's and {@code peer}'s wait counts per round trip of the timed ping-pong, from {@code before} to
     * {@code after} (each rank's own): waits that idled, the share served spinning, spins, yields, parks, sleeps and
     * preempted spins; rank 0's first. Every rank takes part (an all-reduce); NaN where a rank's counts are unknown.
     */
    private double[] bothEnds(MemorySegment stat, int peer, WaitCounts before, WaitCounts after) {
        int rank = comm.rank();
        double[] mine;
        if (before == null || after == null) {
            mine = new double[WAIT_COLUMNS];
            Arrays.fill(mine, Double.NaN);
        } else {
            double[] w = after.perCallSince(before, config.iters());
            mine = new double[] {w[0], w[1], w[2], w[3], w[4], w[5], w[8]};
        }
        stat.fill((byte) 0);
        if (rank == 0 || rank == peer) {
            long at = rank == 0 ? 0 : (long) WAIT_COLUMNS * Double.BYTES;
            MemorySegment.copy(mine, 0, stat, ValueLayout.JAVA_DOUBLE, at, WAIT_COLUMNS);
        }
        comm.allReduce(stat, 2 * WAIT_COLUMNS, DataType.FLOAT64, ReduceOp.SUM);
        return stat.toArray(ValueLayout.JAVA_DOUBLE);
    }

    /** Seconds per ring all-reduce of {@code count} floats: each rank's median iteration, the slowest rank's. */
    private double allReduce(MemorySegment a, MemorySegment b, MemorySegment stat, long count) {
        timeAllReduces(a, b, count, new long[config.warmup()]);
        comm.barrier();
        long[] laps = new long[config.iters()];
        timeAllReduces(a, b, count, laps);
        return slowest(stat, median(laps) / 1e9);
    }

    /** Ring all-reduces of {@code count} floats, one per element of {@code laps}, which gets each one's nanoseconds. */
    private void timeAllReduces(MemorySegment a, MemorySegment b, long count, long[] laps) {
        for (int i = 0; i < laps.length; i++) {
            long t0 = System.nanoTime();
            comm.allReduce(a, b, count, DataType.FLOAT32, ReduceOp.SUM);
            laps[i] = System.nanoTime() - t0;
        }
    }

    /** The median (the mean of the middle two for an even length); sorts {@code v}. */
    static double median(long[] v) {
        Arrays.sort(v);
        int n = v.length;
        return n == 0 ? 0 : (n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0);
    }

    /** Seconds for k all-reduces of {@code count} floats issued together, for each k of {@link #KS}. */
    private double[] contention(Arena arena, MemorySegment stat, long count) {
        int kmax = KS[KS.length - 1];
        MemorySegment[] recv = new MemorySegment[kmax];
        for (int i = 0; i < kmax; i++) {
            recv[i] = buffer(arena, count * 4);
            recv[i].fill((byte) 0); // in place: zeros stay zeros, whatever the repetitions
        }
        double[] t = new double[KS.length];
        for (int j = 0; j < KS.length; j++) {
            int k = KS[j];
            for (int w = 0; w <= config.warmup(); w++) {
                concurrent(recv, count, k, w == config.warmup() ? config.iters() : 1, stat);
            }
            t[j] = concurrent(recv, count, k, config.iters(), stat);
        }
        return t;
    }

    private double concurrent(MemorySegment[] recv, long count, int k, int reps, MemorySegment stat) {
        comm.barrier();
        long[] laps = new long[reps];
        List<MemorySegment> buffers = Arrays.asList(recv).subList(0, k);
        long[] counts = new long[k];
        Arrays.fill(counts, count);
        for (int r = 0; r < reps; r++) {
            long t0 = System.nanoTime();
            comm.allReduceConcurrently(buffers, counts, DataType.FLOAT32, ReduceOp.SUM);
            laps[r] = System.nanoTime() - t0;
        }
        return slowest(stat, median(laps) / 1e9);
    }

    private double slowest(MemorySegment stat, double seconds) {
        stat.set(ValueLayout.JAVA_DOUBLE, 0, seconds);
        comm.allReduce(stat, 1, DataType.FLOAT64, ReduceOp.MAX);
        return stat.get(ValueLayout.JAVA_DOUBLE, 0);
    }

    private MemorySegment buffer(Arena arena, long bytes) {
        return config.userBuffers() ? arena.allocate(bytes, 4096) : comm.allocate(bytes);
    }

    // ---- the report (rank 0) ---------------------------------------------------------------------

    private void report(String transport, List<Long> sizes, int[] peers, String[] kinds, double[][] pp, double[] ar,
                        long gammaBytes, double[] tk) {
        int n = comm.size();
        out.printf(Locale.ROOT,
                "# panamax-perf calibration: np %d, transport %s, sizes %d..%d B, warmup iters %d, iters %d%n",
                n, transport, sizes.isEmpty() ? 0 : sizes.getFirst(), sizes.isEmpty() ? 0 : sizes.getLast(),
                        config.warmup(), config.iters());
        out.println("#");
        StringBuilder h = new StringBuilder(String.format(Locale.ROOT, "#%11s", "size"));
        for (int k = 0; k < peers.length; k++) {
            h.append(String.format(Locale.ROOT, " %18s", "pingpong " + kinds[k] + " 0-" + peers[k]));
        }
        h.append(String.format(Locale.ROOT, " %18s", "allreduce ring"));
        out.println(h);
        out.printf(Locale.ROOT, "#%11s%s%n", "(B)",
                " %18s".formatted("(us, one way)").repeat(peers.length) + " %18s".formatted("(us)"));
        out.println("#   (medians over the iterations)");
        for (int s = 0; s < sizes.size(); s++) {
            StringBuilder l = new StringBuilder(String.format(Locale.ROOT, "%12d", sizes.get(s)));
            for (int k = 0; k < peers.length; k++) {
                l.append(String.format(Locale.ROOT, " %18.2f", pp[k][s] * 1e6));
            }
            l.append(String.format(Locale.ROOT, " %18.2f", ar[s] * 1e6));
            out.println(l);
        }
        double[] m = sizes.stream().mapToDouble(Long::doubleValue).toArray();
        // Paper 004's contention factor for the largest k: k all-reduces of m bytes started together
        // take a + gamma * b * m (a, b from the single all-reduce's fit); gamma = k: no gain from overlap.
        double gamma = Double.NaN;
        if (tk != null && m.length >= 2) {
            try {
                gamma = LinearFit.contention(fit(m, ar), new double[] {gammaBytes}, new double[] {tk[KS.length - 1]})
                        .gamma();
            } catch (IllegalArgumentException e) {
                gamma = Double.NaN;
            }
        }
        String g = Double.isNaN(gamma) ? "N/A" : String.format(Locale.ROOT, "%.3f", gamma);
        out.println("#");
        out.println("# least-squares fit t = alpha + beta * m over the sizes; bw = 1/beta (all-reduce: bus bandwidth "
                + "2(n-1)/n / beta)");
        out.printf(Locale.ROOT, "#%-27s %10s %11s %9s %8s %7s%n", " series", "alpha(us)", "beta(ns/B)", "bw(GB/s)",
                "R^2", "gamma");
        Line[] fits = new Line[peers.length];
        for (int k = 0; k < peers.length; k++) {
            fits[k] = fit(m, pp[k]);
            out.println(fitLine("pingpong " + kinds[k] + " 0<->" + peers[k], fits[k], 1, g));
        }
        Line arFit = fit(m, ar);
        out.println(fitLine("allreduce ring np " + n, arFit, n > 1 ? 2.0 * (n - 1) / n : 1, g));
        if (tk != null) {
            StringBuilder r = new StringBuilder("# gamma: k all-reduces of " + gammaBytes
                    + " B run together (allReduceConcurrently) take T_k/T_1 =");
            for (int j = 0; j < KS.length; j++) {
                r.append(String.format(Locale.ROOT, " %.2f (k=%d)", tk[j] / tk[0], KS[j]));
            }
            out.println(r.append("; gamma (k=" + KS[KS.length - 1] + ", [ASC-WFBP]: T_k = a + gamma b m): " + g));
        }
        String suggestion = suggest(n, peers, kinds, fits, sizes.isEmpty() ? null : pp);
        out.println("# suggested: " + (suggestion == null ? "(no peers to measure)" : "--topology " + suggestion));
        out.println("#");
        out.flush();
    }

    /** The ping-pongs' wait counts per round trip, rank 0's and the peer's ({@code --waits}). */
    private void reportWaits(List<Long> sizes, int[] peers, String[] kinds, double[][][] ppWaits) {
        out.println("# waits per round trip of each ping-pong, rank 0 | the peer: waits that idled, the share of them "
                + "served while spinning, spins, yields, parks, sleeps, preempted spins");
        String columns = "%7s %6s %8s %7s %6s %6s %7s";
        out.printf(Locale.ROOT, "#%11s %18s  " + columns + "  | " + columns + "%n", "size", "pingpong", "idled",
                "spun", "spins", "yields", "parks", "sleeps", "preempt", "idled", "spun", "spins", "yields", "parks",
                "sleeps", "preempt");
        String values = "%7.2f %6.2f %8.1f %7.2f %6.2f %6.2f %7.3f";
        for (int k = 0; k < peers.length; k++) {
            for (int s = 0; s < sizes.size(); s++) {
                double[] w = ppWaits[k][s];
                Object[] args = new Object[2 + 2 * WAIT_COLUMNS];
                args[0] = sizes.get(s);
                args[1] = kinds[k] + " 0-" + peers[k];
                for (int i = 0; i < 2 * WAIT_COLUMNS; i++) {
                    args[2 + i] = w[i];
                }
                out.printf(Locale.ROOT, "%12d %18s  " + values + "  | " + values + "%n", args);
            }
        }
        out.println("#");
    }

    private static String fitLine(String name, Line f, double busFactor, String gamma) {
        double bw = f.beta() > 0 ? busFactor / f.beta() / 1e9 : Double.NaN;
        return String.format(Locale.ROOT, " %-27s %10.3f %11.5f %9.3f %8.5f %7s", name, f.alpha() * 1e6, f.beta() * 1e9,
                bw, f.r2(), gamma);
    }

    /**
     * A {@code --topology} spec from the ping-pong fits: one level per transport, innermost the
     * same-host one (fan-out: the ranks rank 0 reaches over it, plus itself), bandwidth 1/beta
     * and latency alpha (the smallest size's time when the fit's alpha is not positive).
     */
    private String suggest(int n, int[] peers, String[] kinds, Line[] fits, double[][] pp) {
        if (peers.length == 0 || pp == null) {
            return null;
        }
        int inner = -1;
        int outer = -1;
        for (int k = 0; k < kinds.length; k++) {
            if (SAME_HOST.contains(kinds[k])) {
                inner = k;
            } else if (outer < 0) {
                outer = k;
            }
        }
        if (inner < 0 || outer < 0 || kinds.length > 2) {
            return n + ":bw=" + bw(fits[0]) + ":alpha=" + alpha(fits[0], pp[0]);
        }
        int local = 1;
        for (int p = 1; p < n; p++) {
            if (comm.transportTo(p).equals(kinds[inner])) {
                local++;
            }
        }
        if (n % local != 0) {
            return n + ":bw=" + bw(fits[outer]) + ":alpha=" + alpha(fits[outer], pp[outer]) + "  (" + local
                    + " ranks share rank 0's host, which does not divide " + n + ")";
        }
        return local + "x" + (n / local) + ":bw=" + bw(fits[inner]) + "," + bw(fits[outer]) + ":alpha="
                + alpha(fits[inner], pp[inner]) + "," + alpha(fits[outer], pp[outer]);
    }

    private static String bw(Line f) {
        return f.beta() > 0 ? String.format(Locale.ROOT, "%.3gG", 1 / f.beta() / 1e9) : "1G";
    }

    private static String alpha(Line f, double[] times) {
        double a = f.alpha() > 0 ? f.alpha() : (times.length > 0 ? times[0] : 0);
        return String.format(Locale.ROOT, "%.3gus", a * 1e6);
    }

    /** Least squares of t = alpha + beta * m ({@link LinearFit#linear}); NaN parts with fewer than two distinct sizes.
     * */
    static Line fit(double[] m, double[] t) {
        int n = Math.min(m.length, t.length);
        try {
            return LinearFit.linear(Arrays.copyOf(m, n), Arrays.copyOf(t, n));
        } catch (IllegalArgumentException e) {
            return new Line(n == 1 ? t[0] : Double.NaN, Double.NaN, Double.NaN);
        }
    }
}
