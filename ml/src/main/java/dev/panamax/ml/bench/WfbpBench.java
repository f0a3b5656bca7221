package dev.panamax.ml.bench;

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
 * {@code scripts/wfbp-bench}: a synthetic training iteration per {@link SyntheticModels} profile
 * and {@link SyncPolicy}, measured on the ranks of the job and simulated with the model
 * calibrated on them. The profile is scaled (sizes by {@code --size-scale}, times by
 * {@code --time-scale}); "compute" is waiting until each tensor's ready time (the CPU is free, as
 * while a GPU computes), then {@code markReady}; the iteration ends when {@code awaitAll}
 * returns. The policies take turns in rounds (so that a change of load on the machine hits all of
 * them); the measured time is the slowest rank's median over all timed iterations. Rank 0 prints
 * the table and, per model, whether the three policies rank the same measured as simulated. A
 * measured order counts only where every round agrees on it (each round's figure is the slowest
 * rank's median of that round): two policies whose rounds disagree are within this machine's
 * run-to-run noise, printed {@code ~}, and neither confirm nor contradict the simulation.
 */
public final class WfbpBench {
    private WfbpBench() {
    }

    public static void main(String[] args) {
        List<String> models = new ArrayList<>(SyntheticModels.all().keySet());
        models.addAll(SyntheticModels.probes().keySet());
        double sizeScale = 1.0 / 16;
        double timeScale = 0.1;
        int warmup = 2;
        int iters = 10;
        int rounds = 5;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--models" -> models = List.of(args[++i].split(","));
                case "--size-scale" -> sizeScale = Double.parseDouble(args[++i]);
                case "--time-scale" -> timeScale = Double.parseDouble(args[++i]);
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--iters" -> iters = Integer.parseInt(args[++i]);
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + " (known: --models, --size-scale, --time-scale, --warmup, --iters, --rounds)");
            }
        }
        try (Communicator comm = Panamax.fromEnvironment()) {
            boolean print = comm.rank() == 0;
            AllReduceModel model = AllReduceModel.calibrate(comm, AllReduceModel.CALIBRATION_BYTES, 5, 41);
            if (print) {
                System.out.printf(Locale.ROOT, "# wfbp-bench: np %d, transport %s, sizes x %s, times x %s, %d rounds of %d warm-up + %d timed "
                                + "iterations per policy%n", comm.size(), comm.size() > 1 ? comm.transportTo(1) : "self", sizeScale, timeScale,
                        rounds, warmup, iters);
                System.out.printf(Locale.ROOT, "# calibrated: a = %.1f us, b = %.3f ns/B, gamma = %.2f, copy = %.3f ns/B%n", model.a() * 1e6,
                        model.b() * 1e9, model.gamma(), model.copy() * 1e9);
                System.out.printf(Locale.ROOT, "# %-12s %-9s %8s %8s %7s %7s %5s %5s %5s%n", "model", "policy", "tensors", "MB", "meas-ms",
                        "sim-ms", "allr", "fused", "pairs");
            }
            for (String name : models) {
                var supplier = SyntheticModels.all().getOrDefault(name, SyntheticModels.probes().get(name));
                if (supplier == null) {
                    throw new IllegalArgumentException("unknown model " + name + "; known: " + SyntheticModels.all().keySet() + " and the probes "
                            + SyntheticModels.probes().keySet());
                }
                BackwardProfile p = scale(supplier.get(), sizeScale, timeScale);
                int np = SyncPolicy.values().length;
                long[][] laps = new long[np][rounds * iters];
                LayerType[][] types = new LayerType[np][];
                // Rounds over the policies, so that a change of load on the machine hits all of them.
                for (int r = 0; r < rounds; r++) {
                    for (SyncPolicy policy : SyncPolicy.values()) {
                        types[policy.ordinal()] = run(comm, p, model, policy, warmup, iters, laps[policy.ordinal()], r * iters);
                    }
                }
                double[] measured = new double[np];
                double[][] perRound = new double[np][rounds];
                double[] simulated = new double[np];
                for (SyncPolicy policy : SyncPolicy.values()) {
                    measured[policy.ordinal()] = slowestMedian(comm, laps[policy.ordinal()]);
                    for (int r = 0; r < rounds; r++) {
                        perRound[policy.ordinal()][r] = slowestMedian(comm, Arrays.copyOfRange(laps[policy.ordinal()], r * iters, (r + 1) * iters));
                    }
                    simulated[policy.ordinal()] = WfbpSimulator.simulate(p, model, types[policy.ordinal()]).iterationSeconds();
                    if (print) {
                        int[] c = counts(types[policy.ordinal()]);
                        System.out.printf(Locale.ROOT, "  %-12s %-9s %8d %8.1f %7.1f %7.1f %5d %5d %5d%n", name, policy, p.tensors(),
                                p.totalBytes() / 1e6, measured[policy.ordinal()] * 1e3, simulated[policy.ordinal()] * 1e3, c[0], c[1], c[2]);
                    }
                }
                if (print) {
                    System.out.printf(Locale.ROOT, "# %s: measured %s; simulated %s: %s%n", name, measuredOrder(measured, perRound),
                            order(simulated, SIM_TIE), verdict(perRound, simulated));
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

    /** Runs {@code iters} timed iterations into {@code laps} from {@code at}; returns the synchronizer's types. */
    private static LayerType[] run(Communicator comm, BackwardProfile p, AllReduceModel model, SyncPolicy policy, int warmup, int iters,
                                   long[] laps, int at) {
        long[] bytes = p.bytes();
        double[] ready = p.readySeconds();
        MemorySegment[] grads = new MemorySegment[bytes.length];
        try (GradientSynchronizer sync = GradientSynchronizer.builder(comm).policy(policy).model(model)
                .backwardSeconds(p.backwardSeconds()).build()) {
            for (int i = 0; i < grads.length; i++) {
                grads[i] = comm.allocate(Math.max(4, bytes[i]));
                // Ones stay ones under averaging: no denormals, no overflow, however long it runs.
                for (long j = 0; j < bytes[i] / 4; j++) {
                    grads[i].setAtIndex(ValueLayout.JAVA_FLOAT, j, 1f);
                }
                sync.register(grads[i], bytes[i] / 4, DataType.FLOAT32);
            }
            for (int it = 0; it < warmup + iters; it++) {
                long t0 = System.nanoTime();
                waitUntil(t0 + (long) (p.forwardSeconds() * 1e9));
                long backward = System.nanoTime();
                for (int i = 0; i < grads.length; i++) {
                    waitUntil(backward + (long) (ready[i] * 1e9));
                    sync.markReady(i);
                }
                sync.awaitAll();
                if (it >= warmup) {
                    laps[at + it - warmup] = System.nanoTime() - t0;
                }
            }
            return sync.layerTypes();
        } finally {
            for (MemorySegment g : grads) {
                if (g != null) {
                    comm.free(g);
                }
            }
        }
    }

    /** The slowest rank's median of {@code laps}, in seconds (collective). */
    private static double slowestMedian(Communicator comm, long[] laps) {
        long[] sorted = laps.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        double median = (n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0) / 1e9;
        MemorySegment stat = comm.allocate(8);
        try {
            stat.set(ValueLayout.JAVA_DOUBLE, 0, median);
            comm.allReduce(stat, 1, DataType.FLOAT64, ReduceOp.MAX);
            return stat.get(ValueLayout.JAVA_DOUBLE, 0);
        } finally {
            comm.free(stat);
        }
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

    /** Simulated times closer than this (relative) are a tie: the decision's gains below it mean nothing. */
    private static final double SIM_TIE = 1e-3;

    /** The policies from fastest to slowest, e.g. "ASC_WFBP < MG_WFBP < WFBP", "=" for times within {@code tie} (relative). */
    private static String order(double[] seconds, double tie) {
        List<SyncPolicy> p = new ArrayList<>(List.of(SyncPolicy.values()));
        p.sort(Comparator.comparingDouble(x -> seconds[x.ordinal()]));
        StringBuilder b = new StringBuilder(p.getFirst().name());
        for (int i = 1; i < p.size(); i++) {
            boolean same = seconds[p.get(i).ordinal()] - seconds[p.get(i - 1).ordinal()] <= tie * seconds[p.get(i - 1).ordinal()];
            b.append(same ? " = " : " < ").append(p.get(i));
        }
        return b.toString();
    }

    /** Whether policy {@code i} measured faster than {@code j} in every round. */
    private static boolean fasterInEveryRound(double[][] perRound, int i, int j) {
        for (int r = 0; r < perRound[i].length; r++) {
            if (!(perRound[i][r] < perRound[j][r])) {
                return false;
            }
        }
        return true;
    }

    /** The measured order by overall median, with {@code ~} between neighbours whose rounds disagree. */
    private static String measuredOrder(double[] measured, double[][] perRound) {
        List<SyncPolicy> p = new ArrayList<>(List.of(SyncPolicy.values()));
        p.sort(Comparator.comparingDouble(x -> measured[x.ordinal()]));
        StringBuilder b = new StringBuilder(p.getFirst().name());
        for (int i = 1; i < p.size(); i++) {
            boolean resolved = fasterInEveryRound(perRound, p.get(i - 1).ordinal(), p.get(i).ordinal());
            b.append(resolved ? " < " : " ~ ").append(p.get(i));
        }
        return b.toString();
    }

    /**
     * For the pairs of policies the simulation tells apart: "same order" when every one is measured
     * the same way in every round, "order differs" when some pair is measured the other way in every
     * round, otherwise "same order where resolved" naming how many pairs the rounds leave open.
     */
    static String verdict(double[][] perRound, double[] simulated) {
        int agree = 0;
        int differ = 0;
        int open = 0;
        for (int i = 0; i < simulated.length; i++) {
            for (int j = 0; j < simulated.length; j++) {
                if (simulated[i] < simulated[j] * (1 - SIM_TIE)) {
                    if (fasterInEveryRound(perRound, i, j)) {
                        agree++;
                    } else if (fasterInEveryRound(perRound, j, i)) {
                        differ++;
                    } else {
                        open++;
                    }
                }
            }
        }
        if (differ > 0) {
            return "order differs (" + differ + " of " + (agree + differ + open) + " simulated pairs measured the other way in every round)";
        }
        return open == 0 ? "same order" : "same order where resolved (" + agree + " of " + (agree + open) + " pairs; " + open
                + " within run-to-run noise)";
    }
}
