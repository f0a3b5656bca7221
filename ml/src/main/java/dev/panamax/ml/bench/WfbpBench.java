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
 * returns. The measured time is the slowest rank's median over the iterations. Rank 0 prints the
 * table and, per model, whether the three policies rank the same measured as simulated.
 */
public final class WfbpBench {
    private WfbpBench() {
    }

    public static void main(String[] args) {
        List<String> models = new ArrayList<>(SyntheticModels.all().keySet());
        double sizeScale = 1.0 / 16;
        double timeScale = 0.1;
        int warmup = 3;
        int iters = 10;
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
            AllReduceModel model = AllReduceModel.calibrate(comm);
            if (print) {
                System.out.printf(Locale.ROOT, "# wfbp-bench: np %d, transport %s, sizes x %s, times x %s, %d warm-up + %d timed iterations%n",
                        comm.size(), comm.size() > 1 ? comm.transportTo(1) : "self", sizeScale, timeScale, warmup, iters);
                System.out.printf(Locale.ROOT, "# calibrated: a = %.1f us, b = %.3f ns/B, gamma = %.2f%n", model.a() * 1e6, model.b() * 1e9,
                        model.gamma());
                System.out.printf(Locale.ROOT, "# %-12s %-9s %8s %8s %7s %7s %5s %5s %5s%n", "model", "policy", "tensors", "MB", "meas-ms",
                        "sim-ms", "allr", "fused", "pairs");
            }
            for (String name : models) {
                var supplier = SyntheticModels.all().get(name);
                if (supplier == null) {
                    throw new IllegalArgumentException("unknown model " + name + "; known: " + SyntheticModels.all().keySet());
                }
                BackwardProfile p = scale(supplier.get(), sizeScale, timeScale);
                double[] measured = new double[SyncPolicy.values().length];
                double[] simulated = new double[measured.length];
                for (SyncPolicy policy : SyncPolicy.values()) {
                    LayerType[][] types = new LayerType[1][];
                    measured[policy.ordinal()] = run(comm, p, model, policy, warmup, iters, types);
                    simulated[policy.ordinal()] = WfbpSimulator.simulate(p, model, types[0]).iterationSeconds();
                    if (print) {
                        int[] c = counts(types[0]);
                        System.out.printf(Locale.ROOT, "  %-12s %-9s %8d %8.1f %7.1f %7.1f %5d %5d %5d%n", name, policy, p.tensors(),
                                p.totalBytes() / 1e6, measured[policy.ordinal()] * 1e3, simulated[policy.ordinal()] * 1e3, c[0], c[1], c[2]);
                    }
                }
                if (print) {
                    String m = order(measured);
                    String s = order(simulated);
                    System.out.printf(Locale.ROOT, "# %s: measured %s, simulated %s: %s%n", name, m, s, m.equals(s) ? "same order" : "order differs");
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

    /** The slowest rank's median iteration time, in seconds; the synchronizer's types in {@code types[0]}. */
    private static double run(Communicator comm, BackwardProfile p, AllReduceModel model, SyncPolicy policy, int warmup, int iters,
                              LayerType[][] types) {
        long[] bytes = p.bytes();
        double[] ready = p.readySeconds();
        MemorySegment[] grads = new MemorySegment[bytes.length];
        long[] laps = new long[iters];
        try {
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
                        laps[it - warmup] = System.nanoTime() - t0;
                    }
                }
                types[0] = sync.layerTypes();
            }
            Arrays.sort(laps);
            double median = (iters % 2 == 1 ? laps[iters / 2] : (laps[iters / 2 - 1] + laps[iters / 2]) / 2.0) / 1e9;
            MemorySegment stat = comm.allocate(8);
            try {
                stat.set(ValueLayout.JAVA_DOUBLE, 0, median);
                comm.allReduce(stat, 1, DataType.FLOAT64, ReduceOp.MAX);
                return stat.get(ValueLayout.JAVA_DOUBLE, 0);
            } finally {
                comm.free(stat);
            }
        } finally {
            for (MemorySegment g : grads) {
                if (g != null) {
                    comm.free(g);
                }
            }
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

    /** The policies from fastest to slowest, e.g. "ASC_WFBP < MG_WFBP < WFBP". */
    private static String order(double[] seconds) {
        List<SyncPolicy> p = new ArrayList<>(List.of(SyncPolicy.values()));
        p.sort(Comparator.comparingDouble(x -> seconds[x.ordinal()]));
        StringBuilder b = new StringBuilder();
        for (SyncPolicy x : p) {
            b.append(b.isEmpty() ? "" : " < ").append(x);
        }
        return b.toString();
    }
}
