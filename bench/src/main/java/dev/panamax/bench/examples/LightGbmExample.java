package dev.panamax.bench.examples;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.lightgbm.Booster;
import dev.panamax.lightgbm.CommunicatorNetwork;
import dev.panamax.lightgbm.Dataset;
import dev.panamax.lightgbm.NetworkSession;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * LightGBM's data-parallel training ({@code tree_learner=data}) of a binary classifier with Panamax as its
 * network, one rank per process ({@code scripts/lightgbm-example}). Each rank generates its own contiguous
 * share of a synthetic data set (row i is the same whatever the rank count), trains, and rank 0 prints the
 * time of every boosting iteration, the training log-loss over all rows and whether every rank ended with the
 * same model.
 *
 * <p>Options: {@code --rows N} (default 200000), {@code --features F} (20), {@code --iterations K} (20),
 * {@code --leaves L} (31), {@code --seed S} (1).
 */
public final class LightGbmExample {
    private LightGbmExample() {
    }

    public static void main(String[] args) {
        int rows = 200_000;
        int features = 20;
        int iterations = 20;
        int leaves = 31;
        long seed = 1;
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("option " + args[i] + " needs a value");
            }
            switch (args[i]) {
                case "--rows" -> rows = Integer.parseInt(args[i + 1]);
                case "--features" -> features = Integer.parseInt(args[i + 1]);
                case "--iterations" -> iterations = Integer.parseInt(args[i + 1]);
                case "--leaves" -> leaves = Integer.parseInt(args[i + 1]);
                case "--seed" -> seed = Long.parseLong(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + " (--rows, --features, --iterations, --leaves, --seed)");
            }
        }
        try (Communicator comm = Panamax.fromEnvironment()) {
            run(comm, rows, features, iterations, leaves, seed);
        }
    }

    /** What a rank ends with: the training log-loss over all rows and whether every rank has the same model. */
    record Result(double logLoss, boolean sameModel, double meanIterationMillis) {
    }

    static Result run(Communicator comm, int rows, int features, int iterations, int leaves, long seed) {
        int n = comm.size();
        int from = (int) ((long) rows * comm.rank() / n);
        int to = (int) ((long) rows * (comm.rank() + 1) / n);
        double[] x = new double[(to - from) * features];
        float[] y = new float[to - from];
        generate(seed, features, from, to, x, y);
        // One machine: LightGBM's serial learner (num_machines 1 would turn tree_learner=data into it anyway).
        String params = "objective=binary metric=binary_logloss num_leaves=" + leaves + " num_threads=1"
                + " deterministic=true force_row_wise=true verbose=-1 seed=7"
                + (n > 1 ? " tree_learner=data pre_partition=true num_machines=" + n : "");
        try (CommunicatorNetwork network = new CommunicatorNetwork(comm);
             NetworkSession session = n > 1 ? NetworkSession.external(network) : null;
             Dataset train = Dataset.fromMatrix(x, to - from, features, params)) {
            train.setLabels(y);
            try (Booster booster = Booster.create(train, params)) {
                report(comm, "# LightGBM over Panamax: %d ranks, %d rows x %d features, %d leaves%n", n, rows,
                        features, leaves);
                double total = 0;
                for (int i = 0; i < iterations; i++) {
                    long t0 = System.nanoTime();
                    booster.updateOneIteration();
                    double ms = (System.nanoTime() - t0) / 1e6;
                    total += ms;
                    report(comm, "iteration %3d  %8.2f ms%n", i + 1, ms);
                }
                double localLoss = booster.eval(0)[0];
                double loss = sumOverRanks(comm, localLoss * (to - from)) / rows;
                long hash = booster.modelString().hashCode();
                boolean same = overRanks(comm, hash, ReduceOp.MAX) == overRanks(comm, hash, ReduceOp.MIN);
                report(comm, "mean iteration %.2f ms; training log-loss %.6f; same model on every rank: %s%n",
                        total / iterations, loss, same);
                return new Result(loss, same, total / iterations);
            }
        }
    }

    /** Rows [from, to) of the data set: a noisy threshold of a fixed linear score (weights from the seed). */
    static void generate(long seed, int features, int from, int to, double[] x, float[] y) {
        double[] weights = new double[features];
        SplittableRandom w = new SplittableRandom(seed);
        for (int j = 0; j < features; j++) {
            weights[j] = w.nextDouble(-1, 1);
        }
        for (int i = from; i < to; i++) {
            SplittableRandom r = new SplittableRandom(seed * 1_000_003L + i);
            double score = 0;
            for (int j = 0; j < features; j++) {
                double v = j % 4 == 0 ? r.nextInt(8) : r.nextDouble(-2, 2);
                x[(i - from) * features + j] = v;
                score += weights[j] * v;
            }
            y[i - from] = score + r.nextDouble(-0.5, 0.5) > 0 ? 1f : 0f;
        }
    }

    private static double sumOverRanks(Communicator comm, double value) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(ValueLayout.JAVA_DOUBLE);
            s.set(ValueLayout.JAVA_DOUBLE, 0, value);
            comm.allReduce(s, 1, DataType.FLOAT64, ReduceOp.SUM);
            return s.get(ValueLayout.JAVA_DOUBLE, 0);
        }
    }

    private static long overRanks(Communicator comm, long value, ReduceOp op) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(ValueLayout.JAVA_LONG);
            s.set(ValueLayout.JAVA_LONG, 0, value);
            comm.allReduce(s, 1, DataType.INT64, op);
            return s.get(ValueLayout.JAVA_LONG, 0);
        }
    }

    private static void report(Communicator comm, String format, Object... args) {
        if (comm.rank() == 0) {
            System.out.printf(Locale.ROOT, format, args);
        }
    }
}
