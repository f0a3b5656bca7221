package dev.panamax.bench.examples;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.memory.DataType;
import dev.panamax.ml.AllReduceModel;
import dev.panamax.ml.GradientCompression;
import dev.panamax.ml.GradientSynchronizer;
import dev.panamax.ml.Optimizer;
import dev.panamax.ml.ShardedOptimizer;
import dev.panamax.ml.SyncPolicy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.IntConsumer;
import java.util.function.Supplier;

/**
 * Data-parallel training in plain Java with a {@link GradientSynchronizer}: a one-hidden-layer
 * perceptron (tanh, sigmoid output, cross-entropy) learns a synthetic binary classification
 * task, in float64. Each rank computes the mean gradient of its equal share of every global
 * batch; the synchronizer averages them, which is the global batch's mean gradient, so the run
 * follows the single-process run on the same global batches up to rounding.
 *
 * <p>{@code scripts/train-example -np 4} runs it on 4 processes; rank 0 then trains the same
 * model in one process and prints {@code loss distributed=<a> single=<b>}.
 */
public final class MlpExample {
    private MlpExample() {
    }

    /**
     * @param features    input dimension
     * @param hidden      hidden units
     * @param samples     training set size
     * @param globalBatch samples per step over all ranks (a multiple of the rank count)
     * @param steps       optimizer steps
     * @param learningRate SGD step size
     * @param seed        seeds the data and the initial weights
     */
    public record Config(int features, int hidden, int samples, int globalBatch, int steps, double learningRate,
            long seed) {
        public static final Config DEFAULT = new Config(16, 32, 4096, 64, 300, 0.5, 42);
    }

    /** The training set: {@code x[i]} in R^features, {@code y[i]} in {0, 1} from a random teacher network, 5% of labels
     * flipped. */
    record Dataset(double[][] x, double[] y) {
        static Dataset synthetic(Config c) {
            SplittableRandom r = new SplittableRandom(c.seed());
            double[][] teacher = new double[4][c.features()];
            for (double[] row : teacher) {
                for (int j = 0; j < row.length; j++) {
                    row[j] = r.nextGaussian();
                }
            }
            double[][] x = new double[c.samples()][c.features()];
            double[] y = new double[c.samples()];
            for (int i = 0; i < c.samples(); i++) {
                for (int j = 0; j < c.features(); j++) {
                    x[i][j] = r.nextGaussian();
                }
                double score = 0;
                for (int k = 0; k < teacher.length; k++) {
                    double d = 0;
                    for (int j = 0; j < c.features(); j++) {
                        d += teacher[k][j] * x[i][j];
                    }
                    score += (k % 2 == 0 ? 1 : -1) * Math.tanh(d);
                }
                boolean label = score > 0;
                y[i] = (r.nextDouble() < 0.05) != label ? 1 : 0;
            }
            return new Dataset(x, y);
        }
    }

    /**
     * The network's parameters and their gradients, the gradients in native memory as a framework
     * would keep them. Gradient tensors in backward order: b2, w2, b1, w1.
     */
    static final class Mlp implements AutoCloseable {
        final int features;
        final int hidden;
        final double[] w1;
        final double[] b1;
        final double[] w2;
        final double[] b2 = new double[1];
        final Arena arena = Arena.ofShared();
        /** Gradients, in backward order. */
        final MemorySegment[] grads;
        final int[] sizes;

        Mlp(Config c) {
            features = c.features();
            hidden = c.hidden();
            w1 = new double[hidden * features];
            b1 = new double[hidden];
            w2 = new double[hidden];
            SplittableRandom r = new SplittableRandom(c.seed() * 31 + 7);
            double s1 = 1 / Math.sqrt(features);
            for (int i = 0; i < w1.length; i++) {
                w1[i] = r.nextGaussian() * s1;
            }
            double s2 = 1 / Math.sqrt(hidden);
            for (int i = 0; i < w2.length; i++) {
                w2[i] = r.nextGaussian() * s2;
            }
            sizes = new int[]{1, hidden, hidden, hidden * features};
            grads = new MemorySegment[sizes.length];
            for (int t = 0; t < sizes.length; t++) {
                grads[t] = arena.allocate(8L * sizes[t], 64);
            }
        }

        /** Mean cross-entropy over {@code data}. */
        double loss(Dataset data) {
            double sum = 0;
            double[] h = new double[hidden];
            for (int i = 0; i < data.y().length; i++) {
                double p = forward(data.x()[i], h);
                double y = data.y()[i];
                sum -= y * Math.log(Math.max(p, 1e-300)) + (1 - y) * Math.log(Math.max(1 - p, 1e-300));
            }
            return sum / data.y().length;
        }

        private double forward(double[] x, double[] h) {
            double z = b2[0];
            for (int k = 0; k < hidden; k++) {
                double a = b1[k];
                for (int j = 0; j < features; j++) {
                    a += w1[k * features + j] * x[j];
                }
                h[k] = Math.tanh(a);
                z += w2[k] * h[k];
            }
            return 1 / (1 + Math.exp(-z));
        }

        /**
         * Back-propagation of the mean loss over samples {@code [from, to)} of {@code order} into
         * {@link #grads}; {@code ready.accept(t)} as gradient t (backward order) is final.
         */
        void backward(Dataset data, int[] order, int from, int to, IntConsumer ready) {
            int n = to - from;
            double[] gw1 = new double[w1.length];
            double[] gb1 = new double[hidden];
            double[] gw2 = new double[hidden];
            double gb2 = 0;
            double[][] hs = new double[n][hidden];
            double[] dz = new double[n];
            for (int s = 0; s < n; s++) {
                int i = order[from + s];
                double p = forward(data.x()[i], hs[s]);
                dz[s] = (p - data.y()[i]) / n;
            }
            // Output layer first, as back-propagation goes: its gradients are ready before the hidden layer's.
            for (int s = 0; s < n; s++) {
                gb2 += dz[s];
                for (int k = 0; k < hidden; k++) {
                    gw2[k] += dz[s] * hs[s][k];
                }
            }
            grads[0].setAtIndex(ValueLayout.JAVA_DOUBLE, 0, gb2);
            ready.accept(0);
            MemorySegment.copy(gw2, 0, grads[1], ValueLayout.JAVA_DOUBLE, 0, hidden);
            ready.accept(1);
            for (int s = 0; s < n; s++) {
                double[] x = data.x()[order[from + s]];
                for (int k = 0; k < hidden; k++) {
                    double da = dz[s] * w2[k] * (1 - hs[s][k] * hs[s][k]);
                    gb1[k] += da;
                    for (int j = 0; j < features; j++) {
                        gw1[k * features + j] += da * x[j];
                    }
                }
            }
            MemorySegment.copy(gb1, 0, grads[2], ValueLayout.JAVA_DOUBLE, 0, hidden);
            ready.accept(2);
            MemorySegment.copy(gw1, 0, grads[3], ValueLayout.JAVA_DOUBLE, 0, gw1.length);
            ready.accept(3);
        }

        /** The parameter arrays in the gradients' (backward) order: b2, w2, b1, w1. */
        double[][] parametersInBackwardOrder() {
            return new double[][] {b2, w2, b1, w1};
        }

        /** SGD step with the gradients in {@link #grads}. */
        void step(double lr) {
            b2[0] -= lr * grads[0].getAtIndex(ValueLayout.JAVA_DOUBLE, 0);
            update(w2, grads[1], lr);
            update(b1, grads[2], lr);
            update(w1, grads[3], lr);
        }

        private static void update(double[] w, MemorySegment g, double lr) {
            for (int i = 0; i < w.length; i++) {
                w[i] -= lr * g.getAtIndex(ValueLayout.JAVA_DOUBLE, i);
            }
        }

        @Override
        public void close() {
            arena.close();
        }
    }

    /** The sample order of each epoch: a permutation drawn from the seed, the same in every process. */
    static int[] shuffled(int samples, SplittableRandom r) {
        int[] order = new int[samples];
        for (int i = 0; i < samples; i++) {
            order[i] = i;
        }
        for (int i = samples - 1; i > 0; i--) {
            int j = r.nextInt(i + 1);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        return order;
    }

    /** Trains in this process on the full global batches; returns the final training loss. */
    public static double trainSingle(Config c) {
        Dataset data = Dataset.synthetic(c);
        try (Mlp net = new Mlp(c)) {
            loop(c, data, (order, start) -> {
                net.backward(data, order, start, start + c.globalBatch(), t -> {
                });
                net.step(c.learningRate());
            });
            return net.loss(data);
        }
    }

    /**
     * Trains on {@code comm}'s ranks, each on its share of every global batch, the gradients
     * averaged by a synchronizer with {@code policy} and {@code model} (calibrated when null);
     * returns the final training loss (the same on every rank).
     */
    public static double trainDistributed(Communicator comm, Config c, SyncPolicy policy, AllReduceModel model) {
        return trainDistributed(comm, c, policy, model, new long[1]);
    }

    /** As above; adds the time spent in the steps (backward, exchange, update) to {@code stepNanos[0]}. */
    static double trainDistributed(Communicator comm, Config c, SyncPolicy policy, AllReduceModel model,
            long[] stepNanos) {
        GradientSynchronizer.Builder b = GradientSynchronizer.builder(comm).policy(policy).profileIterations(3);
        if (model != null) {
            b.model(model);
        }
        Curve curve = train(comm, c, b, c.steps() + 1);
        stepNanos[0] += (long) (curve.seconds() * 1e9);
        return curve.finalLoss();
    }

    /** What a run reports: the loss every {@code every} steps, the final loss, the time in the steps. */
    record Curve(List<Double> losses, double finalLoss, double seconds) {
    }

    /**
     * Trains on {@code comm}'s ranks as {@link #trainDistributed} does (WFBP), each bucket all-reduced through
     * {@code compression}; records the loss every {@code every} steps (the same on every rank).
     */
    static Curve trainCompressed(Communicator comm, Config c, GradientCompression compression, int every) {
        return train(comm, c, GradientSynchronizer.builder(comm).policy(SyncPolicy.WFBP).compression(compression),
                every);
    }

    /** Trains on {@code comm}'s ranks, each on its share of every global batch, with the synchronizer {@code b}. */
    private static Curve train(Communicator comm, Config c, GradientSynchronizer.Builder b, int every) {
        int share = share(comm, c);
        Dataset data = Dataset.synthetic(c);
        List<Double> losses = new ArrayList<>();
        long[] nanos = new long[1];
        int[] steps = new int[1];
        try (Mlp net = new Mlp(c); GradientSynchronizer sync = b.build()) {
            for (int t = 0; t < net.grads.length; t++) {
                sync.register(net.grads[t], net.sizes[t], DataType.FLOAT64);
            }
            loop(c, data, (order, start) -> {
                long t0 = System.nanoTime();
                int from = start + comm.rank() * share;
                net.backward(data, order, from, from + share, sync::markReady);
                sync.awaitAll();
                net.step(c.learningRate());
                nanos[0] += System.nanoTime() - t0;
                if (++steps[0] % every == 0) {
                    losses.add(net.loss(data));
                }
            });
            return new Curve(losses, net.loss(data), nanos[0] / 1e9);
        }
    }

    /**
     * What a sharded run reports: the loss every {@code every} steps, the final loss, the time of the
     * steps (the loss evaluations left out) and the state sizes.
     */
    public record ShardedRun(List<Double> losses, double finalLoss, double seconds, long stateBytesPerRank,
            long unshardedStateBytes) {
    }

    /**
     * Trains on {@code comm}'s ranks with a {@link ShardedOptimizer} (ZeRO {@code stage}): the network's
     * gradients and parameters are the optimizer's flat buffers, each rank updates its shard and the
     * parameters are all-gathered every step. On one rank it is plain training with that optimizer.
     * Records the training loss every {@code every} steps.
     */
    public static ShardedRun trainSharded(Communicator comm, Config c, Optimizer optimizer,
            ShardedOptimizer.Stage stage, int every) {
        int share = share(comm, c);
        Dataset data = Dataset.synthetic(c);
        List<Double> losses = new ArrayList<>();
        try (Mlp net = new Mlp(c)) {
            ShardedOptimizer.Builder b = ShardedOptimizer.builder(comm).optimizer(optimizer).stage(stage)
                    .type(DataType.FLOAT64);
            for (int size : net.sizes) {
                b.tensor(size);
            }
            try (ShardedOptimizer opt = b.build()) {
                double[][] params = net.parametersInBackwardOrder();
                for (int t = 0; t < params.length; t++) {
                    MemorySegment.copy(params[t], 0, opt.parameters(t), ValueLayout.JAVA_DOUBLE, 0, params[t].length);
                    net.grads[t] = opt.gradient(t); // back-propagation writes straight into the flat buffer
                }
                int[] step = {0};
                long[] stepNanos = {0};
                loop(c, data, (order, start) -> {
                    long t0 = System.nanoTime();
                    int from = start + comm.rank() * share;
                    net.backward(data, order, from, from + share, opt::markReady);
                    opt.step();
                    for (int t = 0; t < params.length; t++) {
                        MemorySegment.copy(opt.parameters(t), ValueLayout.JAVA_DOUBLE, 0, params[t], 0,
                                params[t].length);
                    }
                    stepNanos[0] += System.nanoTime() - t0; // the steps only, not the loss evaluations
                    if (++step[0] % every == 0) {
                        losses.add(net.loss(data));
                    }
                });
                double seconds = stepNanos[0] / 1e9;
                return new ShardedRun(losses, net.loss(data), seconds, opt.optimizerStateBytes(),
                        opt.unshardedStateBytes());
            }
        }
    }

    /** The samples of each global batch one rank takes. */
    private static int share(Communicator comm, Config c) {
        int n = comm.size();
        if (c.globalBatch() % n != 0) {
            throw new IllegalArgumentException("global batch " + c.globalBatch() + " is not a multiple of the " + n
                    + " ranks");
        }
        return c.globalBatch() / n;
    }

    private interface Step {
        void run(int[] order, int start);
    }

    /** {@code c.steps()} steps over global batches of a fresh permutation per epoch. */
    private static void loop(Config c, Dataset data, Step step) {
        SplittableRandom r = new SplittableRandom(c.seed() ^ 0x5DEECE66DL);
        int perEpoch = c.samples() / c.globalBatch();
        int[] order = null;
        for (int s = 0; s < c.steps(); s++) {
            if (s % perEpoch == 0) {
                order = shuffled(c.samples(), r);
            }
            step.run(order, (s % perEpoch) * c.globalBatch());
        }
    }

    /**
     * Joins the job described by the environment ({@code scripts/panamax-run}), trains, and on rank
     * 0 also trains in one process and prints {@code loss distributed=<a> single=<b>}. Options:
     * {@code --policy wfbp|mg_wfbp|asc_wfbp} (default asc_wfbp), {@code --steps N}, {@code --features F},
     * {@code --hidden H} (the model's size), {@code --sharded} (a ZeRO-2 {@link ShardedOptimizer}),
     * {@code --zero 1|2}, {@code --optimizer sgd|momentum|adam} (with the sharded optimizer),
     * {@code --compression bf16|bf16-wire|powersgd:R} (gradients all-reduced as bfloat16, on a bfloat16 wire with
     * float64 sums, or as PowerSGD's rank-R approximation, then the same run uncompressed: both loss curves and
     * times per step).
     */
    public static void main(String[] args) {
        SyncPolicy policy = SyncPolicy.ASC_WFBP;
        Config c = Config.DEFAULT;
        ShardedOptimizer.Stage stage = null;
        String optimizer = "sgd";
        String compression = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--policy" -> policy = SyncPolicy.valueOf(args[++i].toUpperCase(Locale.ROOT).replace('-', '_'));
                case "--steps" -> c = new Config(c.features(), c.hidden(), c.samples(), c.globalBatch(),
                        Integer.parseInt(args[++i]),
                        c.learningRate(), c.seed());
                case "--hidden" -> c = new Config(c.features(), Integer.parseInt(args[++i]), c.samples(),
                        c.globalBatch(), c.steps(), c.learningRate(), c.seed());
                case "--features" -> c = new Config(Integer.parseInt(args[++i]), c.hidden(), c.samples(),
                        c.globalBatch(), c.steps(), c.learningRate(), c.seed());
                case "--sharded" -> stage = ShardedOptimizer.Stage.GRADIENTS;
                case "--zero" -> stage = switch (args[++i]) {
                    case "1" -> ShardedOptimizer.Stage.OPTIMIZER_STATE;
                    case "2" -> ShardedOptimizer.Stage.GRADIENTS;
                    default -> throw new IllegalArgumentException("--zero 1 or --zero 2, not " + args[i]);
                };
                case "--optimizer" -> optimizer = args[++i];
                case "--compression" -> compression = args[++i];
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + " (known: --policy, --steps, --features, --hidden, --sharded, --zero 1|2, "
                        + "--optimizer sgd|momentum|adam, --compression bf16|bf16-wire|powersgd:R)");
            }
        }
        if (stage != null) {
            mainSharded(c, stage, optimizer);
            return;
        }
        if (compression != null) {
            mainCompressed(c, compression);
            return;
        }
        try (Communicator comm = Panamax.fromEnvironment()) {
            long t0 = System.nanoTime();
            long[] stepNanos = new long[1];
            double distributed = trainDistributed(comm, c, policy, null, stepNanos);
            double seconds = (System.nanoTime() - t0) / 1e9;
            if (comm.rank() == 0) {
                double single = trainSingle(c);
                System.out.printf(Locale.ROOT, "ranks %d, policy %s, %d steps of global batch %d, %.2f s distributed "
                        + "(%.3f ms/step in the steps)%n", comm.size(), policy, c.steps(), c.globalBatch(), seconds,
                        stepNanos[0] / 1e6 / c.steps());
                System.out.printf(Locale.ROOT, "loss distributed=%.10f single=%.10f%n", distributed, single);
            }
        }
    }

    /**
     * {@code --compression bf16|bf16-wire|powersgd:R}: trains with the gradients compressed, then again uncompressed
     * (float64, as they are), on the same ranks; rank 0 prints both loss curves and the time per step.
     */
    private static void mainCompressed(Config c, String name) {
        Supplier<GradientCompression> hook = compression(name);
        int every = Math.max(1, c.steps() / 6);
        try (Communicator comm = Panamax.fromEnvironment()) {
            // A short run of each first, so that neither timed run pays for the JIT's warm-up.
            Config warmUp = new Config(c.features(), c.hidden(), c.samples(), c.globalBatch(), Math.min(30, c.steps()),
                    c.learningRate(), c.seed());
            trainCompressed(comm, warmUp, hook.get(), warmUp.steps());
            trainCompressed(comm, warmUp, GradientCompression.none(), warmUp.steps());
            Curve compressed = trainCompressed(comm, c, hook.get(), every);
            Curve plain = trainCompressed(comm, c, GradientCompression.none(), every);
            if (comm.rank() != 0) {
                return;
            }
            System.out.printf(Locale.ROOT, "ranks %d, WFBP, %d steps of global batch %d: gradients as %s %.3f "
                    + "ms/step, as float64 %.3f ms/step%n", comm.size(), c.steps(), c.globalBatch(), name,
                    compressed.seconds() * 1e3 / c.steps(), plain.seconds() * 1e3 / c.steps());
            for (int k = 0; k < compressed.losses().size(); k++) {
                System.out.printf(Locale.ROOT, "step %d loss %s=%.10f float64=%.10f%n", (k + 1) * every, name,
                        compressed.losses().get(k), plain.losses().get(k));
            }
            System.out.printf(Locale.ROOT, "loss %s=%.10f float64=%.10f%n", name, compressed.finalLoss(),
                    plain.finalLoss());
        }
    }

    /**
     * The hook {@code --compression} names: {@code bf16}, {@code bf16-wire} (bfloat16 on the wire, sums in the
     * gradients' type), or {@code powersgd:R} (PowerSGD of rank R).
     */
    static Supplier<GradientCompression> compression(String name) {
        if (name.equals("bf16")) {
            return GradientCompression::bf16;
        }
        if (name.equals("bf16-wire")) {
            return () -> GradientCompression.onWire(DataType.BFLOAT16);
        }
        if (name.matches("powersgd:[1-9][0-9]*")) {
            int rank = Integer.parseInt(name.substring(name.indexOf(':') + 1));
            return () -> GradientCompression.powerSgd(rank);
        }
        throw new IllegalArgumentException("--compression bf16, bf16-wire or powersgd:R (R the rank, 1 or more), not "
                + name);
    }

    /**
     * {@code --sharded} / {@code --zero 1|2}: trains with a {@link ShardedOptimizer}; rank 0 then trains
     * the same model in one process with the same optimizer and prints both loss curves, the time
     * per step and the optimizer state per rank against unsharded.
     */
    private static void mainSharded(Config c, ShardedOptimizer.Stage stage, String name) {
        Optimizer optimizer = switch (name) {
            case "sgd" -> Optimizer.sgd(c.learningRate());
            case "momentum" -> Optimizer.sgd(c.learningRate() / 5, 0.8);
            case "adam" -> Optimizer.adam(0.01);
            default -> throw new IllegalArgumentException("--optimizer sgd, momentum or adam, not " + name);
        };
        int every = Math.max(1, c.steps() / 6);
        try (Communicator comm = Panamax.fromEnvironment()) {
            ShardedRun run = trainSharded(comm, c, optimizer, stage, every);
            if (comm.rank() != 0) {
                return;
            }
            ShardedRun single;
            List<Communicator> one = Panamax.local(1);
            try {
                single = trainSharded(one.getFirst(), c, optimizer, stage, every);
            } finally {
                one.getFirst().close();
            }
            System.out.printf(Locale.ROOT, "ranks %d, sharded (ZeRO-%d), %s, %d steps of global batch %d, %.2f s "
                    + "in the steps (%.3f ms/step)%n", comm.size(), stage == ShardedOptimizer.Stage.GRADIENTS ? 2 : 1,
                    optimizer, c.steps(), c.globalBatch(), run.seconds(), run.seconds() * 1e3 / c.steps());
            System.out.printf(Locale.ROOT, "optimizer state per rank %d bytes, unsharded %d bytes (%.2fx less)%n",
                    run.stateBytesPerRank(), run.unshardedStateBytes(),
                    run.stateBytesPerRank() == 0 ? 1.0 : (double) run.unshardedStateBytes() / run.stateBytesPerRank());
            for (int k = 0; k < run.losses().size(); k++) {
                System.out.printf(Locale.ROOT, "step %d loss distributed=%.10f single=%.10f%n", (k + 1) * every,
                        run.losses().get(k), single.losses().get(k));
            }
            System.out.printf(Locale.ROOT, "loss distributed=%.10f single=%.10f%n", run.finalLoss(),
                    single.finalLoss());
        }
    }
}
