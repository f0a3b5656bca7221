package dev.panamax.bench.ml;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.ml.AllReduceModel;
import dev.panamax.ml.BackwardProfile;
import dev.panamax.ml.GradientSynchronizer;
import dev.panamax.ml.LayerType;
import dev.panamax.ml.SyncPolicy;
import dev.panamax.ml.WfbpSimulator;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;

/**
 * {@code scripts/bench/wfbp-bench}: a synthetic training iteration per {@link SyntheticModels} profile
 * and {@link SyncPolicy}, measured on the ranks of the job and simulated with the model
 * calibrated on them. The profile is scaled (sizes by {@code --size-scale}, times by
 * {@code --time-scale}); "compute" is waiting until each tensor's ready time (the CPU is free, as
 * while a GPU computes), then {@code markReady}; the iteration ends when {@code awaitAll}
 * returns.
 *
 * <p>The three policies' synchronizers live side by side and take turns iteration by iteration
 * (the first of each turn rotating), so that the load of a shared machine, which drifts over
 * seconds, hits them alike and each turn gives one <em>paired</em> sample: an iteration of each
 * policy under nearly the same conditions. An iteration's time is the slowest rank's; the table
 * shows the median per policy. Rank 0 then prints, per model, whether the policies rank the same
 * measured as simulated. A measured order of two policies counts only when one is faster in
 * significantly more turns than the other (two-sided sign test, p below {@link #ALPHA}); otherwise
 * the pair is within this machine's noise, printed {@code ~}, and neither confirms nor contradicts
 * the simulation. Simulated times closer than the calibrated line's median relative error are a
 * tie, not a prediction, and are not judged.
 */
public final class WfbpBench {
    private WfbpBench() {
    }

    public static void main(String[] args) {
        List<String> models = new ArrayList<>(SyntheticModels.all().keySet());
        models.addAll(SyntheticModels.probes().keySet());
        double sizeScale = 1.0 / 16;
        double timeScale = 0.1;
        int warmup = 3;
        int iters = 50;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--models" -> models = List.of(args[++i].split(","));
                case "--size-scale" -> sizeScale = Double.parseDouble(args[++i]);
                case "--time-scale" -> timeScale = Double.parseDouble(args[++i]);
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--iters" -> iters = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + " (known: --models, --size-scale, --time-scale, --warmup, --iters)");
            }
        }
        try (Communicator comm = Panamax.fromEnvironment()) {
            boolean print = comm.rank() == 0;
            AllReduceModel.Calibration calibration =
                    AllReduceModel.measure(comm, AllReduceModel.CALIBRATION_BYTES, 5, 41);
            AllReduceModel model = calibration.model();
            // A simulated gap smaller than the model's own error at the sizes it was fitted to is no prediction.
            double tie = Math.max(MIN_SIM_TIE, calibration.medianRelativeError());
            if (print) {
                System.out.printf(Locale.ROOT,
                        "# wfbp-bench: np %d, transport %s, sizes x %s, times x %s, %d warm-up + %d timed turns "
                                + "(an iteration of each policy per turn)%n", comm.size(),
                                comm.size() > 1 ? comm.transportTo(1) : "self",
                        sizeScale, timeScale, warmup, iters);
                System.out.printf(Locale.ROOT,
                        "# calibrated: a = %.1f us, b = %.3f ns/B, gamma = %.2f, copy = %.3f ns/B, pair startup = "
                                + "%.1f us%n",
                        model.a() * 1e6, model.b() * 1e9, model.gamma(), model.copy() * 1e9, model.pairA() * 1e6);
                for (int i = 0; i < calibration.bytes().length; i++) {
                    long m = calibration.bytes()[i];
                    System.out.printf(Locale.ROOT,
                            "#   %8d B: one %8.3f ms (a + b m: %8.3f), two together %8.3f ms (%.2fx; model: %8.3f)%n",
                            m, calibration.oneSeconds()[i] * 1e3, model.seconds(m) * 1e3,
                                    calibration.pairSeconds()[i] * 1e3,
                            calibration.pairSeconds()[i] / calibration.oneSeconds()[i],
                                    model.simultaneousSeconds(new double[]{m, m}) * 1e3);
                }
                System.out.printf(Locale.ROOT,
                        "# the model's error: median %.0f %% over those sizes; simulated times closer than that are a "
                                + "tie (=)%n",
                        tie * 100);
                System.out.printf(Locale.ROOT, "# %-12s %-9s %8s %8s %7s %7s %5s %5s %5s%n", "model", "policy",
                        "tensors", "MB", "meas-ms",
                        "sim-ms", "allr", "fused", "pairs");
            }
            for (String name : models) {
                var supplier = SyntheticModels.all().getOrDefault(name, SyntheticModels.probes().get(name));
                if (supplier == null) {
                    throw new IllegalArgumentException("unknown model " + name + "; known: "
                            + SyntheticModels.all().keySet() + " and the probes "
                            + SyntheticModels.probes().keySet());
                }
                BackwardProfile p = scale(supplier.get(), sizeScale, timeScale);
                int np = SyncPolicy.values().length;
                LayerType[][] types = new LayerType[np][];
                double[][] laps = slowest(comm, run(comm, p, model, warmup, iters, types));
                double[] measured = new double[np];
                double[] simulated = new double[np];
                for (SyncPolicy policy : SyncPolicy.values()) {
                    int k = policy.ordinal();
                    measured[k] = median(laps[k]);
                    simulated[k] = WfbpSimulator.simulate(p, model, types[k]).iterationSeconds();
                    if (print) {
                        int[] c = counts(types[k]);
                        System.out.printf(Locale.ROOT, "  %-12s %-9s %8d %8.1f %7.1f %7.1f %5d %5d %5d%n", name, policy,
                                p.tensors(),
                                p.totalBytes() / 1e6, measured[k] * 1e3, simulated[k] * 1e3, c[0], c[1], c[2]);
                    }
                }
                if (print) {
                    for (String line : pairs(laps, simulated)) {
                        System.out.println("#   " + line);
                    }
                    System.out.printf(Locale.ROOT, "# %s: measured %s; simulated %s: %s%n", name,
                            measuredOrder(measured, laps),
                            order(simulated, tie), verdict(laps, simulated, tie));
                }
            }
        }
    }

    /** The profile with sizes rounded to whole float32 elements. */
    static BackwardProfile scale(BackwardProfile p, double sizeScale, double timeScale) {
        long[] bytes = p.bytes();
        double[] t = p.backwardSeconds();
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = bytes[i] == 0 ? 0 : 4 * Math.max(1, Math.round(bytes[i] * sizeScale / 4));
            t[i] *= timeScale;
        }
        return new BackwardProfile(p.forwardSeconds() * timeScale, t, bytes);
    }

    /**
     * Runs {@code warmup + iters} turns of one iteration per policy, each policy with its own
     * synchronizer and gradients, the policy that goes first rotating from turn to turn. Returns
     * this rank's timed iterations, nanoseconds, by policy and turn; puts each synchronizer's
     * layer types into {@code types}.
     */
    private static long[][] run(Communicator comm, BackwardProfile p, AllReduceModel model, int warmup, int iters,
            LayerType[][] types) {
        SyncPolicy[] policies = SyncPolicy.values();
        long[] bytes = p.bytes();
        double[] ready = p.readySeconds();
        GradientSynchronizer[] syncs = new GradientSynchronizer[policies.length];
        List<MemorySegment> grads = new ArrayList<>();
        try {
            for (SyncPolicy policy : policies) {
                GradientSynchronizer sync = GradientSynchronizer.builder(comm).policy(policy).model(model)
                        .backwardSeconds(p.backwardSeconds()).build();
                syncs[policy.ordinal()] = sync;
                for (long b : bytes) {
                    MemorySegment g = comm.allocate(Math.max(4, b));
                    grads.add(g);
                    // Ones stay ones under averaging: no denormals, no overflow, however long it runs.
                    for (long j = 0; j < b / 4; j++) {
                        g.setAtIndex(ValueLayout.JAVA_FLOAT, j, 1f);
                    }
                    sync.register(g, b / 4, DataType.FLOAT32);
                }
            }
            long[][] laps = new long[policies.length][iters];
            for (int turn = 0; turn < warmup + iters; turn++) {
                for (int k = 0; k < policies.length; k++) {
                    int policy = (turn + k) % policies.length;
                    long lap = iterate(syncs[policy], p.forwardSeconds(), ready);
                    if (turn >= warmup) {
                        laps[policy][turn - warmup] = lap;
                    }
                }
            }
            for (SyncPolicy policy : policies) {
                types[policy.ordinal()] = syncs[policy.ordinal()].layerTypes();
            }
            return laps;
        } finally {
            for (GradientSynchronizer sync : syncs) {
                if (sync != null) {
                    sync.close();
                }
            }
            grads.forEach(comm::free);
        }
    }

    /** One synthetic training iteration; its time in nanoseconds. */
    private static long iterate(GradientSynchronizer sync, double forwardSeconds, double[] ready) {
        long t0 = System.nanoTime();
        waitUntil(t0 + (long) (forwardSeconds * 1e9));
        long backward = System.nanoTime();
        for (int i = 0; i < ready.length; i++) {
            waitUntil(backward + (long) (ready[i] * 1e9));
            sync.markReady(i);
        }
        sync.awaitAll();
        return System.nanoTime() - t0;
    }

    /** Per policy and turn, the slowest rank's iteration time in seconds (collective). */
    private static double[][] slowest(Communicator comm, long[][] laps) {
        int rows = laps.length;
        int cols = laps[0].length;
        MemorySegment s = comm.allocate(8L * rows * cols);
        try {
            for (int i = 0; i < rows; i++) {
                for (int j = 0; j < cols; j++) {
                    s.setAtIndex(ValueLayout.JAVA_DOUBLE, (long) i * cols + j, laps[i][j] / 1e9);
                }
            }
            comm.allReduce(s, (long) rows * cols, DataType.FLOAT64, ReduceOp.MAX);
            double[][] out = new double[rows][cols];
            for (int i = 0; i < rows; i++) {
                for (int j = 0; j < cols; j++) {
                    out[i][j] = s.getAtIndex(ValueLayout.JAVA_DOUBLE, (long) i * cols + j);
                }
            }
            return out;
        } finally {
            comm.free(s);
        }
    }

    static double median(double[] x) {
        double[] sorted = x.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    /** Sleeps until {@code deadline} (System.nanoTime), leaving the CPU to the communication. */
    private static void waitUntil(long deadline) {
        for (long left = deadline - System.nanoTime(); left > 0; left = deadline - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    /** All-reduces per iteration, fused groups, pairs run together. */
    private static int[] counts(LayerType[] t) {
        int allReduces = 0;
        int fused = 0;
        int pairs = 0;
        boolean inGroup = false;
        for (LayerType x : t) {
            if (x == LayerType.MERGED) {
                if (!inGroup) {
                    fused++;
                }
                inGroup = true;
                continue;
            }
            inGroup = false;
            allReduces++;
            if (x == LayerType.SIMULTANEOUS) {
                pairs++;
            }
        }
        return new int[]{allReduces, fused, pairs};
    }

    /** The smallest relative difference of simulated times that counts as a difference at all. */
    private static final double MIN_SIM_TIE = 1e-3;

    /** The policies from fastest to slowest, e.g. "ASC_WFBP < MG_WFBP < WFBP", "=" for times within {@code tie}
     * (relative). */
    private static String order(double[] seconds, double tie) {
        List<SyncPolicy> p = new ArrayList<>(List.of(SyncPolicy.values()));
        p.sort(Comparator.comparingDouble(x -> seconds[x.ordinal()]));
        StringBuilder b = new StringBuilder(p.getFirst().name());
        for (int i = 1; i < p.size(); i++) {
            boolean same = seconds[p.get(i).ordinal()] - seconds[p.get(i - 1).ordinal()] <= tie * seconds[p.get(i - 1)
                    .ordinal()];
            b.append(same ? " = " : " < ").append(p.get(i));
        }
        return b.toString();
    }

    /** Two-sided significance level of the sign test that resolves a measured order. */
    static final double ALPHA = 0.01;

    /** Turns in which policy {@code i} was faster than {@code j}. */
    private static int wins(double[][] laps, int i, int j) {
        int w = 0;
        for (int t = 0; t < laps[i].length; t++) {
            if (laps[i][t] < laps[j][t]) {
                w++;
            }
        }
        return w;
    }

    /**
     * Two-sided sign test: the probability, if either policy were as likely to win a turn, of a split
     * at least as uneven as {@code wins} against {@code losses} (ties left out).
     */
    static double signTestP(int wins, int losses) {
        int n = wins + losses;
        int k = Math.min(wins, losses);
        // log C(n, i) - n log 2, summed in doubles: n is at most a few thousand turns.
        double tail = 0;
        double logTerm = -n * Math.log(2);
        for (int i = 0; i <= k; i++) {
            tail += Math.exp(logTerm);
            logTerm += Math.log((double) (n - i) / (i + 1));
        }
        return Math.min(1, 2 * tail);
    }

    /** Whether policy {@code i} is measured faster than {@code j}: more wins, and significantly so. */
    static boolean fasterThan(double[][] laps, int i, int j) {
        int w = wins(laps, i, j);
        int l = wins(laps, j, i);
        return w > l && signTestP(w, l) < ALPHA;
    }

    /** The measured order by median, with {@code ~} between neighbours the turns do not tell apart. */
    private static String measuredOrder(double[] measured, double[][] laps) {
        List<SyncPolicy> p = new ArrayList<>(List.of(SyncPolicy.values()));
        p.sort(Comparator.comparingDouble(x -> measured[x.ordinal()]));
        StringBuilder b = new StringBuilder(p.getFirst().name());
        for (int i = 1; i < p.size(); i++) {
            boolean resolved = fasterThan(laps, p.get(i - 1).ordinal(), p.get(i).ordinal());
            b.append(resolved ? " < " : " ~ ").append(p.get(i));
        }
        return b.toString();
    }

    /**
     * Per pair of policies, the slower one as simulated first: simulated ratio of their times, the
     * median of the measured per-turn ratios, the turns each won and the sign test's p.
     */
    static List<String> pairs(double[][] laps, double[] simulated) {
        SyncPolicy[] policies = SyncPolicy.values();
        List<String> out = new ArrayList<>();
        for (int i = 0; i < policies.length; i++) {
            for (int j = i + 1; j < policies.length; j++) {
                int slow = simulated[i] >= simulated[j] ? i : j;
                int fast = slow == i ? j : i;
                double[] ratio = new double[laps[slow].length];
                for (int t = 0; t < ratio.length; t++) {
                    ratio[t] = laps[slow][t] / laps[fast][t];
                }
                int w = wins(laps, fast, slow);
                int l = wins(laps, slow, fast);
                out.add(String.format(Locale.ROOT,
                        "%s / %s: simulated %.3f, measured %.3f (median per turn); %s faster in %d of %d turns, p = "
                                + "%.2g",
                        policies[slow], policies[fast], simulated[slow] / simulated[fast], median(ratio),
                                policies[fast], w, ratio.length,
                        signTestP(w, l)));
            }
        }
        return out;
    }

    /**
     * For the pairs of policies the simulation tells apart: "same order" when the turns resolve every
     * one the simulated way, "order differs" when they resolve some pair the other way, otherwise
     * "same order where resolved" naming how many pairs stay within the noise.
     */
    static String verdict(double[][] laps, double[] simulated, double tie) {
        int agree = 0;
        int differ = 0;
        int open = 0;
        for (int i = 0; i < simulated.length; i++) {
            for (int j = 0; j < simulated.length; j++) {
                if (simulated[i] < simulated[j] * (1 - tie)) {
                    if (fasterThan(laps, i, j)) {
                        agree++;
                    } else if (fasterThan(laps, j, i)) {
                        differ++;
                    } else {
                        open++;
                    }
                }
            }
        }
        if (differ > 0) {
            return "order differs (" + differ + " of " + (agree + differ + open)
                    + " simulated pairs measured the other way)";
        }
        return open == 0 ? "same order" : "same order where resolved (" + agree + " of " + (agree + open) + " pairs; "
                + open
                + " within the noise)";
    }
}
