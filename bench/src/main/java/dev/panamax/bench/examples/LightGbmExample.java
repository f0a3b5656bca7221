package dev.panamax.bench.examples;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.lightgbm.ElasticLightGbm;
import dev.panamax.lightgbm.PanamaxLightGbm;
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
 * {@code --leaves L} (31), {@code --seed S} (1), {@code --warmup W} (5: the iterations left out of the second
 * mean; the first ones also warm the JIT up), {@code --network panamax|sockets} (panamax; sockets runs
 * LightGBM's own TCP network on 127.0.0.1 instead, for comparison).
 *
 * <p>Elastic training ({@link ElasticLightGbm}): {@code --recoveries N} (0: none) lets the job lose
 * up to N ranks; {@code --kill-rank R --kill-iteration K} (none) makes rank R kill itself with SIGKILL after
 * iteration K. Rank 0 then prints each recovery, and the log-loss is over the survivors' rows.
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
        int warmup = 5;
        PanamaxLightGbm.Network network = PanamaxLightGbm.Network.PANAMAX;
        int recoveries = 0;
        int killRank = -1;
        int killIteration = 0;
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
                case "--warmup" -> warmup = Integer.parseInt(args[i + 1]);
                case "--network" -> network = switch (args[i + 1]) {
                    case "panamax" -> PanamaxLightGbm.Network.PANAMAX;
                    case "sockets" -> PanamaxLightGbm.Network.LIGHTGBM_SOCKETS;
                    default -> throw new IllegalArgumentException("--network panamax or sockets: " + args[i + 1]);
                };
                case "--recoveries" -> recoveries = Integer.parseInt(args[i + 1]);
                case "--kill-rank" -> killRank = Integer.parseInt(args[i + 1]);
                case "--kill-iteration" -> killIteration = Integer.parseInt(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i] + " (--rows, --features,"
                        + " --iterations, --leaves, --seed, --warmup, --network, --recoveries, --kill-rank,"
                        + " --kill-iteration)");
            }
        }
        if (recoveries > 0 && network != PanamaxLightGbm.Network.PANAMAX) {
            throw new IllegalArgumentException("--recoveries needs --network panamax");
        }
        try (Communicator comm = Panamax.fromEnvironment()) {
            run(comm, rows, features, iterations, leaves, seed, warmup, network,
                    new Elastic(recoveries, killRank, killIteration));
        }
    }

    /**
     * What a rank ends with: the training log-loss over all rows, whether every rank has the same model, and the
     * mean time of an iteration over all of them and over those after the first {@code warmup}.
     */
    record Result(double logLoss, boolean sameModel, double meanIterationMillis, double meanAfterWarmupMillis) {
    }

    /** Elastic training: up to {@code recoveries} lost ranks ({@code 0}: plain training); a rank that kills itself. */
    record Elastic(int recoveries, int killRank, int killIteration) {
        static final Elastic NONE = new Elastic(0, -1, 0);
    }

    static Result run(Communicator comm, int rows, int features, int iterations, int leaves, long seed,
            int warmup, PanamaxLightGbm.Network network) {
        return run(comm, rows, features, iterations, leaves, seed, warmup, network, Elastic.NONE);
    }

    static Result run(Communicator comm, int rows, int features, int iterations, int leaves, long seed,
            int warmup, PanamaxLightGbm.Network network, Elastic elastic) {
        int n = comm.size();
        int from = (int) ((long) rows * comm.rank() / n);
        int to = (int) ((long) rows * (comm.rank() + 1) / n);
        double[] x = new double[(to - from) * features];
        float[] y = new float[to - from];
        generate(seed, features, from, to, x, y);
        String params = "objective=binary metric=binary_logloss num_leaves=" + leaves + " num_threads=1"
                + " deterministic=true force_row_wise=true verbose=-1 seed=7";
        report(comm, "# LightGBM over %s: %d ranks, %d rows x %d features, %d leaves%n",
                network == PanamaxLightGbm.Network.PANAMAX ? "Panamax" : "LightGBM's sockets", n, rows, features,
                leaves);
        double[] millis = new double[iterations];
        double[] localLoss = {Double.NaN};
        PanamaxLightGbm.LocalData data = new PanamaxLightGbm.LocalData(x, to - from, features, y);
        long[] previousEnd = {System.nanoTime()};
        PanamaxLightGbm.IterationListener listener = (i, nanos, booster) -> {
            millis[i - 1] = nanos / 1e6;
            long now = System.nanoTime();
            double gapMillis = (now - nanos - previousEnd[0]) / 1e6;
            previousEnd[0] = now;
            // A long gap before an iteration is a recovery (or, before the first, building the data set).
            report(comm, "iteration %3d  %8.2f ms%s%n", i, nanos / 1e6, gapMillis < 100 || i == 1 ? ""
                    : String.format(Locale.ROOT, "  (began %.0f ms after iteration %d ended)", gapMillis, i - 1));
            if (i == iterations) {
                localLoss[0] = booster.eval(0)[0];
            }
            if (comm.rank() == elastic.killRank() && i == elastic.killIteration()) {
                ElasticExample.killThisProcess();
            }
        };
        String model;
        Communicator end = comm;
        if (elastic.recoveries() > 0) {
            ElasticLightGbm.Result result = ElasticLightGbm.train(comm, params, data, iterations,
                    elastic.recoveries(), listener);
            model = result.model();
            end = result.communicator();
            for (ElasticLightGbm.Recovery r : result.recoveries()) {
                report(end, "recovered: rank(s) %s of %d lost, %d ranks go on from iteration %d (%.3f s)%n",
                        r.lostRanks(), r.fromSize(), r.toSize(), r.iteration(), r.seconds());
            }
        } else {
            model = PanamaxLightGbm.train(comm, params, data, iterations, listener, network);
        }
        try {
            long rowsLeft = Math.round(sumOverRanks(end, to - from));
            double loss = sumOverRanks(end, localLoss[0] * (to - from)) / rowsLeft;
            long hash = model.hashCode();
            boolean same = overRanks(end, hash, ReduceOp.MAX) == overRanks(end, hash, ReduceOp.MIN);
            int skipped = Math.min(warmup, iterations - 1);
            double all = mean(millis, 0);
            double after = mean(millis, skipped);
            report(end, "mean iteration %.2f ms, %.2f ms after the first %d; training log-loss %.6f over %d rows;"
                    + " same model on every rank: %s%n", all, after, skipped, loss, rowsLeft, same);
            return new Result(loss, same, all, after);
        } finally {
            if (end != comm) {
                end.close();
            }
        }
    }

    private static double mean(double[] values, int from) {
        double sum = 0;
        for (int i = from; i < values.length; i++) {
            sum += values[i];
        }
        return values.length > from ? sum / (values.length - from) : Double.NaN;
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
