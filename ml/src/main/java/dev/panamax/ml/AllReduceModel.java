package dev.panamax.ml;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.plan.LinearFit;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The all-reduce cost model of [ASC-WFBP]: one all-reduce of m bytes takes {@code a + b m}
 * (eq. 3); k all-reduces started together share the startup a and contend for the links, which
 * gamma measures: two of m bytes each take {@code a + gamma b m} (eq. 9), 1 &lt;= gamma &lt;= 2
 * in practice (1: perfect overlap, 2: they take turns). For k all-reduces of different sizes this
 * model takes the largest at full speed and every other byte at the contention penalty
 * {@code (gamma - 1) b} per byte (eq. 11): {@code a + b (max m + (gamma - 1)(sum m - max m))}.
 *
 * <p>One more term is this library's, not the paper's: {@code copy}, the time per byte of a local
 * memory copy. {@link GradientSynchronizer} copies a fused group's tensors into its fusion buffer
 * and back out on the thread that issues the all-reduces, so a fused group of S bytes also costs
 * {@code 2 copy S} of that thread's time ({@link WfbpSimulator} places it); 0 leaves fusion free,
 * as the paper's model does.
 *
 * <p>The figures depend on the transport, the rank count and the machine: measure them with
 * {@link #calibrate(Communicator)} on the communicator that will run the all-reduces, or with
 * {@code scripts/panamax-perf --calibrate}.
 *
 * @param a     startup time of one all-reduce, seconds
 * @param b     time per byte, seconds
 * @param gamma contention factor of two simultaneous all-reduces
 * <p>{@code maxFusedBytes} bounds the fused groups the decision forms: {@link #calibrate} sets it to
 * the largest size it measured, because beyond it {@code a + b m} is an extrapolation (over TCP the
 * cost per byte keeps growing: a 33.6 MB fused group took 3 ns/B where the line fitted up to 16
 * MiB said 2.0), as deep-learning frameworks cap their fusion buckets.
 *
 * <p>{@code pairA} is the startup of two all-reduces started together, in the paper the same a.
 * {@link #calibrate} measures it: here two small all-reduces run together took 1.2x to 1.6x one,
 * where {@code a + gamma b m} said 1.0x, so a pair saves less than a whole a against two in a row.
 *
 * @param copy  time per byte of a local copy (fusion buffer in or out), seconds
 * @param pairA startup of all-reduces started together, seconds
 * @param maxFusedBytes the largest fused group {@link LayerTypes#decide} may form, bytes
 */
public record AllReduceModel(double a, double b, double gamma, double copy, double pairA, long maxFusedBytes) {
    /** The paper's 8-node 10 GbE cluster (section VI-B): a = 1.4 ms, b = 1.7 ns/B, gamma = 1.5; copies free. */
    public static final AllReduceModel PAPER_10GBE = new AllReduceModel(1.4e-3, 1.7e-9, 1.5);

    public AllReduceModel {
        if (!(a >= 0) || !(b >= 0) || !(gamma >= 0) || !(copy >= 0) || Double.isInfinite(a) || Double.isInfinite(b)
                || Double.isInfinite(gamma) || Double.isInfinite(copy)) {
            throw new IllegalArgumentException("a, b, gamma and copy must be finite and >= 0: a=" + a + " b=" + b
                    + " gamma=" + gamma
                    + " copy=" + copy);
        }
        if (!(pairA >= 0) || Double.isInfinite(pairA)) {
            throw new IllegalArgumentException("pairA must be finite and >= 0: " + pairA);
        }
        if (maxFusedBytes <= 0) {
            throw new IllegalArgumentException("maxFusedBytes must be > 0: " + maxFusedBytes);
        }
    }

    /** The paper's startup for pairs too (pairA = a); fusion unbounded. */
    public AllReduceModel(double a, double b, double gamma, double copy) {
        this(a, b, gamma, copy, a, Long.MAX_VALUE);
    }

    /** The paper's model: fusion copies free and unbounded. */
    public AllReduceModel(double a, double b, double gamma) {
        this(a, b, gamma, 0);
    }

    /** Local copy of {@code bytes} (into or out of a fusion buffer). */
    public double copySeconds(double bytes) {
        return copy * bytes;
    }

    /** Eq. 3: one all-reduce of {@code bytes}. */
    public double seconds(double bytes) {
        return a + b * bytes;
    }

    /** All-reduces of {@code bytes[j]} each, started together, until the last is done (see the class comment). */
    public double simultaneousSeconds(double[] bytes) {
        if (bytes.length == 0) {
            return 0;
        }
        double max = 0;
        double sum = 0;
        for (double m : bytes) {
            max = Math.max(max, m);
            sum += m;
        }
        return (bytes.length == 1 ? a : pairA) + b * (max + (gamma - 1) * (sum - max));
    }

    /**
     * Sizes {@link #calibrate(Communicator)} measures: 4 KiB to 16 MiB by factors of 4 (the paper fits
     * 8 KiB to 4 MiB; fused groups of large models reach tens of MB, and over TCP the time per byte
     * still grows past 4 MiB).
     */
    public static final List<Long> CALIBRATION_BYTES =
            List.of(4L << 10, 16L << 10, 64L << 10, 256L << 10, 1L << 20, 4L << 20, 16L << 20);

    /**
     * Measures the model on {@code comm}; collective (every rank calls it). a and b: a line fitted
     * to the median time of an in-place float32 all-reduce of each size of
     * {@link #CALIBRATION_BYTES} by least squares on the relative error (so that the small sizes,
     * which carry a, weigh as much as the large ones, which carry b; plain least squares lets the
     * noise of the largest times decide a); gamma: the pair's time against the single's at the same
     * size ({@link #contentionAgainstSingles}), from the median time of two such all-reduces run
     * together by {@link Communicator#allReduceConcurrently}. Each time is the slowest rank's, and
     * each all-reduce (or pair) starts after a barrier, untimed: a synchronizer's all-reduces start
     * when back-propagation hands over a gradient, not in a tight loop, where consecutive
     * all-reduces overlap across ranks (the loop made small all-reduces look several times cheaper
     * and pairs look as if they shared bandwidth they do not). A JIT warm-up on the smallest size
     * comes first, and the sizes are swept twice, each keeping its faster median. copy: the median time of a
     * {@link MemorySegment#copy} of {@link #COPY_CALIBRATION_BYTES} between native segments, per
     * byte, the slowest rank's (larger than caches, as fusion buffers of big models are). Takes a
     * few seconds on shared memory.
     */
    public static AllReduceModel calibrate(Communicator comm) {
        return calibrate(comm, CALIBRATION_BYTES, 5, 21);
    }

    /** {@link #calibrate(Communicator)} over the given sizes (multiples of 4 bytes), warm-up and timed repetitions per
     * size. */
    public static AllReduceModel calibrate(Communicator comm, List<Long> sizes, int warmup, int reps) {
        return measure(comm, sizes, warmup, reps).model();
    }

    /**
     * What {@link #calibrate} measured: per size ({@code bytes}), the slowest rank's median seconds
     * of one all-reduce alone ({@code oneSeconds}) and of two run together ({@code pairSeconds}),
     * each started after a barrier, and the model fitted to them.
     */
    public record Calibration(long[] bytes, double[] oneSeconds, double[] pairSeconds, AllReduceModel model) {
        /**
         * How far the model's {@code a + b m} typically is from the measured single times: the median
         * over the sizes of {@code |a + b m - one| / one} (the median, so that one noisy size does not
         * decide it). Simulated gaps below it are not predictions.
         */
        public double medianRelativeError() {
            double[] e = new double[bytes.length];
            for (int i = 0; i < e.length; i++) {
                e[i] = Math.abs(model.seconds(bytes[i]) - oneSeconds[i]) / oneSeconds[i];
            }
            return median(e);
        }
    }

    /** {@link #calibrate(Communicator, List, int, int)}, keeping the measured times (collective). */
    public static Calibration measure(Communicator comm, List<Long> sizes, int warmup, int reps) {
        if (sizes.size() < 2) {
            throw new IllegalArgumentException("calibration needs at least two sizes: " + sizes);
        }
        if (reps < 1 || warmup < 0) {
            throw new IllegalArgumentException("reps must be >= 1 and warmup >= 0: " + reps + ", " + warmup);
        }
        long max = 0;
        long min = Long.MAX_VALUE;
        for (long s : sizes) {
            if (s <= 0 || s % 4 != 0) {
                throw new IllegalArgumentException("calibration sizes must be positive multiples of 4 bytes: " + s);
            }
            max = Math.max(max, s);
            min = Math.min(min, s);
        }
        MemorySegment pool = comm.allocate(Math.max(COLD_POOL_BYTES, 2 * max));
        MemorySegment stat = comm.allocate(8);
        try {
            double[] m = new double[sizes.size()];
            double[] one = new double[m.length];
            double[] two = new double[m.length];
            medians(JIT_WARMUP, 1, () -> { }, allReduces(comm, pool, min, 1), allReduces(comm, pool, min, 2));
            Arrays.fill(one, Double.POSITIVE_INFINITY);
            Arrays.fill(two, Double.POSITIVE_INFINITY);
            for (int pass = 0; pass < PASSES; pass++) {
                for (int i = 0; i < m.length; i++) {
                    m[i] = sizes.get(i);
                    double[] t = medians(warmup, reps, comm::barrier, allReduces(comm, pool, sizes.get(i), 1),
                            allReduces(comm, pool, sizes.get(i), 2));
                    one[i] = Math.min(one[i], slowest(comm, stat, t[0]));
                    two[i] = Math.min(two[i], slowest(comm, stat, t[1]));
                }
            }
            LinearFit.Line line = relativeFit(m, one);
            double b = Math.max(0, line.beta());
            double a = Math.max(0, line.alpha());
            double gamma = b > 0 ? contentionAgainstSingles(a, one, two) : 1;
            double pairA = pairStartup(a, Math.max(0, gamma), one, two);
            double copy = slowest(comm, stat, copySecondsPerByte(warmup, reps));
            long[] bytes = sizes.stream().mapToLong(Long::longValue).toArray();
            return new Calibration(bytes, one, two, new AllReduceModel(a, b, Math.max(0, gamma), copy, pairA, max));
        } finally {
            comm.free(stat);
            comm.free(pool);
        }
    }

    /**
     * gamma from measured times at each size, of one all-reduce alone ({@code one}) and of two
     * started together ({@code two}): the least-squares solution of
     * {@code two_i - a = gamma (one_i - a)}, so {@code gamma = sum((two_i - a)(one_i - a)) / sum((one_i - a)^2)}.
     * Against the measured single rather than the fitted line: where the line misses the single
     * time (over TCP it overestimates the large sizes), gamma taken against the line absorbs that
     * error (it measured 1.5 where two 4 MiB all-reduces took twice one). Absolute least squares,
     * so the large sizes, where the bandwidth term gamma scales dominates, decide it.
     */
    static double contentionAgainstSingles(double a, double[] one, double[] two) {
        double num = 0;
        double den = 0;
        for (int i = 0; i < one.length; i++) {
            double x = one[i] - a;
            num += (two[i] - a) * x;
            den += x * x;
        }
        return den > 0 ? num / den : 1;
    }

    /**
     * The startup of a pair: a plus the mean of {@code two_i - a - gamma (one_i - a)} over the sizes,
     * weighted by {@code 1 / two_i^2} (relative error, as {@link #relativeFit}: the small sizes,
     * where the startup is most of the time, decide it rather than the noise of the large ones).
     * Not below 0.
     */
    static double pairStartup(double a, double gamma, double[] one, double[] two) {
        double sum = 0;
        double weights = 0;
        for (int i = 0; i < one.length; i++) {
            double w = 1 / (two[i] * two[i]);
            sum += w * (two[i] - a - gamma * (one[i] - a));
            weights += w;
        }
        return Math.max(0, a + sum / weights);
    }

    /** The copy {@link #calibrate} times: 16 MiB, beyond the caches, like the fusion buffer of a large model. */
    public static final long COPY_CALIBRATION_BYTES = 16L << 20;

    /** Median seconds per byte of a copy of {@link #COPY_CALIBRATION_BYTES} between two native segments (pages touched
     * first). */
    private static double copySecondsPerByte(int warmup, int reps) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment from = arena.allocate(COPY_CALIBRATION_BYTES, 64).fill((byte) 1);
            MemorySegment to = arena.allocate(COPY_CALIBRATION_BYTES, 64).fill((byte) 0);
            Runnable copy = () -> MemorySegment.copy(from, 0, to, 0, COPY_CALIBRATION_BYTES);
            return medians(warmup, reps, () -> { }, copy, copy)[0] / COPY_CALIBRATION_BYTES;
        }
    }

    /** All-reduces before the timed ones of {@link #calibrate}, so that the JIT has compiled the paths. */
    private static final int JIT_WARMUP = 1000;
    /**
     * Sweeps over the sizes; each size keeps its fastest median. Right after start-up the JIT
     * compiler threads still compete for the cores, which the first sweep may feel.
     */
    private static final int PASSES = 2;

    /**
     * Bytes the calibration's all-reduces cycle through: twice the 32 MiB last-level cache of the
     * machines measured, so that each all-reduce finds its data out of the caches, as a gradient
     * written during back-propagation and then left for the all-reduce does. Reusing one buffer
     * kept it cached and made 1 MiB all-reduces over TCP look twice as fast as 32 distinct ones.
     */
    static final long COLD_POOL_BYTES = 64L << 20;

    /**
     * One all-reduce of {@code bytes}, or two at once, each on the next slice of {@code pool}
     * (round robin, so the slices of a pair differ).
     */
    private static Runnable allReduces(Communicator comm, MemorySegment pool, long bytes, int k) {
        long count = bytes / 4;
        long slots = pool.byteSize() / bytes;
        long[] next = {0};
        if (k == 1) {
            return () -> comm.allReduce(pool.asSlice(next[0]++ % slots * bytes, bytes), count, DataType.FLOAT32,
                    ReduceOp.SUM);
        }
        long[] counts = {count, count};
        return () -> {
            long i = next[0];
            next[0] += 2;
            List<MemorySegment> both = List.of(pool.asSlice(i % slots * bytes, bytes), pool.asSlice((i + 1) % slots
                    * bytes, bytes));
            comm.allReduceConcurrently(both, counts, DataType.FLOAT32, ReduceOp.SUM);
        };
    }

    /**
     * {@code t = alpha + beta m} minimizing the sum of squared relative errors
     * {@code ((alpha + beta m_i - t_i) / t_i)^2} (weighted least squares, weights {@code 1 / t_i^2});
     * r2 is {@link LinearFit#linear}'s for the fitted line's unweighted residuals.
     */
    static LinearFit.Line relativeFit(double[] m, double[] t) {
        double w = 0;
        double mx = 0;
        double my = 0;
        for (int i = 0; i < m.length; i++) {
            double wi = 1 / (t[i] * t[i]);
            w += wi;
            mx += wi * m[i];
            my += wi * t[i];
        }
        mx /= w;
        my /= w;
        double sxx = 0;
        double sxy = 0;
        for (int i = 0; i < m.length; i++) {
            double wi = 1 / (t[i] * t[i]);
            sxx += wi * (m[i] - mx) * (m[i] - mx);
            sxy += wi * (m[i] - mx) * (t[i] - my);
        }
        double beta = sxy / sxx;
        double alpha = my - beta * mx;
        double mean = 0;
        for (double v : t) {
            mean += v / t.length;
        }
        double res = 0;
        double tot = 0;
        for (int i = 0; i < m.length; i++) {
            res += Math.pow(t[i] - alpha - beta * m[i], 2);
            tot += Math.pow(t[i] - mean, 2);
        }
        return new LinearFit.Line(alpha, beta, tot > 0 ? 1 - res / tot : 1);
    }

    /**
     * Median seconds of {@code first} and of {@code second}, timed alternately so that a change of
     * load hits both alike; {@code align} runs, untimed, before each.
     */
    private static double[] medians(int warmup, int reps, Runnable align, Runnable first, Runnable second) {
        for (int i = 0; i < warmup; i++) {
            first.run();
            second.run();
        }
        long[] a = new long[reps];
        long[] b = new long[reps];
        for (int i = 0; i < reps; i++) {
            align.run();
            long t0 = System.nanoTime();
            first.run();
            long t1 = System.nanoTime();
            align.run();
            long t2 = System.nanoTime();
            second.run();
            a[i] = t1 - t0;
            b[i] = System.nanoTime() - t2;
        }
        return new double[]{median(a), median(b)};
    }

    /** Median of nanosecond laps, in seconds. */
    private static double median(long[] laps) {
        return median(Arrays.stream(laps).mapToDouble(ns -> ns / 1e9).toArray());
    }

    /** Median of {@code x} (sorts it). */
    private static double median(double[] x) {
        Arrays.sort(x);
        int n = x.length;
        return n % 2 == 1 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
    }

    private static double slowest(Communicator comm, MemorySegment stat, double seconds) {
        stat.set(ValueLayout.JAVA_DOUBLE, 0, seconds);
        comm.allReduce(stat, 1, DataType.FLOAT64, ReduceOp.MAX);
        return stat.get(ValueLayout.JAVA_DOUBLE, 0);
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "a=%.3gs b=%.3gs/B gamma=%.3f copy=%.3gs/B pairA=%.3gs%s", a, b, gamma, copy,
                pairA,
                maxFusedBytes == Long.MAX_VALUE ? "" : " maxFusedBytes=" + maxFusedBytes);
    }
}
