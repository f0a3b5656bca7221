package dev.panamax.bench.examples;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Blocks;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.training.dataset.Batch;
import ai.djl.training.listener.TrainingListenerAdapter;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.djl.DataParallelTraining;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.ml.SyncPolicy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Data-parallel training of a DJL model (PyTorch engine, CPU) with Panamax averaging the gradients
 * ({@code scripts/djl-example}): an MLP on MNIST-shaped synthetic images (784 pixels, 10 classes, each class a
 * cluster around its own prototype image), the same global batch on any number of processes, each rank taking its
 * share of every batch (row i is the same for every rank count). Rank 0 prints the loss of the global batch every
 * few steps, the throughput in samples per second and the share of a step spent exchanging gradients.
 *
 * <p>Options: {@code --steps N} (default 200), {@code --batch B} (global batch, 128; a multiple of the rank
 * count), {@code --hidden H} (256), {@code --warmup W} (10: steps left out of the timing), {@code --seed S} (1),
 * {@code --every K} (20: print the loss every K steps), {@code --policy wfbp|mg-wfbp|asc-wfbp} (the gradient
 * synchronizer's, asc-wfbp).
 */
public final class DjlExample {
    static final int PIXELS = 784;
    static final int CLASSES = 10;

    private DjlExample() {
    }

    public static void main(String[] args) {
        Options o = Options.parse(args);
        try (Communicator comm = Panamax.fromEnvironment()) {
            run(comm, o);
        }
    }

    /** The example's settings. */
    record Options(int steps, int batch, int hidden, int warmup, long seed, int every, SyncPolicy policy) {
        static Options parse(String[] args) {
            int steps = 200;
            int batch = 128;
            int hidden = 256;
            int warmup = 10;
            long seed = 1;
            int every = 20;
            SyncPolicy policy = SyncPolicy.ASC_WFBP;
            for (int i = 0; i < args.length; i += 2) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("option " + args[i] + " needs a value");
                }
                switch (args[i]) {
                    case "--steps" -> steps = Integer.parseInt(args[i + 1]);
                    case "--batch" -> batch = Integer.parseInt(args[i + 1]);
                    case "--hidden" -> hidden = Integer.parseInt(args[i + 1]);
                    case "--warmup" -> warmup = Integer.parseInt(args[i + 1]);
                    case "--seed" -> seed = Long.parseLong(args[i + 1]);
                    case "--every" -> every = Integer.parseInt(args[i + 1]);
                    case "--policy" ->
                        policy = SyncPolicy.valueOf(args[i + 1].toUpperCase(Locale.ROOT).replace('-', '_'));
                    default -> throw new IllegalArgumentException("unknown option " + args[i]
                            + " (--steps, --batch, --hidden, --warmup, --seed, --every, --policy)");
                }
            }
            return new Options(steps, batch, hidden, warmup, seed, every, policy);
        }
    }

    /**
     * What rank 0 reports: the global batch's loss at every step, samples per second and the share of a step
     * spent in the gradient exchange (both over the steps after the warm-up, the slowest rank's times).
     */
    record Result(float[] losses, double samplesPerSecond, double exchangeShare, int zeroCopyGradients) {
    }

    static Result run(Communicator comm, Options o) {
        if (o.batch() % comm.size() != 0 || o.steps() <= o.warmup()) {
            throw new IllegalArgumentException("the global batch " + o.batch() + " must split evenly over "
                    + comm.size() + " ranks, and --steps must exceed --warmup");
        }
        // One PyTorch thread per rank (ranks share the CPUs); nothing is downloaded: libtorch comes from the jar.
        System.setProperty("ai.djl.pytorch.num_threads", "1");
        System.setProperty("ai.djl.pytorch.num_interop_threads", "1");
        System.setProperty("ai.djl.offline", "true");
        Engine.getInstance().setRandomSeed((int) o.seed() + comm.rank()); // rank 0's parameters win: broadcast
        int per = o.batch() / comm.size();
        float[] losses = new float[o.steps()];
        double[] stepSeconds = new double[2];
        DataParallelTraining.Stats stats;
        try (Model model = Model.newInstance("mlp");
             DataParallelTraining dp = DataParallelTraining.over(comm, o.policy())) {
            model.setBlock(new SequentialBlock()
                    .add(Blocks.batchFlattenBlock(PIXELS))
                    .add(Linear.builder().setUnits(o.hidden()).build())
                    .add(Activation::relu)
                    .add(Linear.builder().setUnits(o.hidden()).build())
                    .add(Activation::relu)
                    .add(Linear.builder().setUnits(CLASSES).build()));
            int[] step = {0};
            DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optOptimizer(Optimizer.sgd().setLearningRateTracker(Tracker.fixed(0.1f)).build())
                    .addTrainingListeners(dp, new TrainingListenerAdapter() {
                        @Override
                        public void onTrainingBatch(Trainer trainer, BatchData batch) {
                            NDList labels = batch.getLabels().values().iterator().next();
                            NDList predictions = batch.getPredictions().values().iterator().next();
                            losses[step[0]] = trainer.getLoss().evaluate(labels, predictions).getFloat();
                        }
                    });
            try (Trainer trainer = model.newTrainer(config)) {
                dp.initialize(trainer, new Shape(per, PIXELS));
                long timedFrom = 0;
                long syncBefore = 0;
                for (; step[0] < o.steps(); step[0]++) {
                    if (step[0] == o.warmup()) {
                        timedFrom = System.nanoTime();
                        syncBefore = dp.stats().syncNanos();
                    }
                    try (NDManager batchManager = trainer.getManager().newSubManager()) {
                        int first = step[0] * o.batch() + comm.rank() * per;
                        EasyTrain.trainBatch(trainer, batch(batchManager, o.seed(), first, per));
                        trainer.step();
                    }
                }
                stats = dp.stats();
                stepSeconds[0] = (System.nanoTime() - timedFrom) / 1e9 / (o.steps() - o.warmup());
                stepSeconds[1] = (stats.syncNanos() - syncBefore) / 1e9 / (o.steps() - o.warmup());
            }
        }
        // The listener is closed: the communicator is free for the report.
        float[] global = overRanks(comm, losses, ReduceOp.AVG);
        double slowestStep = overRanks(comm, new float[] {(float) stepSeconds[0]}, ReduceOp.MAX)[0];
        double exchange = overRanks(comm, new float[] {(float) stepSeconds[1]}, ReduceOp.MAX)[0];
        Result r = new Result(global, o.batch() / slowestStep, exchange / slowestStep, stats.zeroCopyGradients());
        if (comm.rank() == 0) {
            System.out.printf(Locale.ROOT, "# DJL (PyTorch %s, CPU) over Panamax: %d ranks, global batch %d (%d per "
                    + "rank), MLP 784-%d-%d-10, %d gradients exchanged in place, %d copied%n",
                    Engine.getInstance().getVersion(), comm.size(), o.batch(), per, o.hidden(), o.hidden(),
                    stats.zeroCopyGradients(), stats.copiedGradients());
            for (int s = 0; s < o.steps(); s++) {
                if ((s + 1) % o.every() == 0 || s == 0) {
                    System.out.printf(Locale.ROOT, "step %4d  loss %.6f%n", s + 1, global[s]);
                }
            }
            System.out.printf(Locale.ROOT, "%.0f samples/s, %.2f ms a step, %.1f%% of it exchanging gradients "
                    + "(steps %d-%d)%n", r.samplesPerSecond(), slowestStep * 1e3, 100 * r.exchangeShare(),
                    o.warmup() + 1, o.steps());
        }
        return r;
    }

    /**
     * Rows {@code [first, first + rows)}: row i is class {@code c} (from the row's own seed) drawn around
     * class c's prototype image (from {@code seed}) with uniform noise.
     */
    static Batch batch(NDManager manager, long seed, int first, int rows) {
        float[][] prototypes = new float[CLASSES][PIXELS];
        SplittableRandom p = new SplittableRandom(seed);
        for (float[] image : prototypes) {
            for (int j = 0; j < PIXELS; j++) {
                image[j] = p.nextInt(4) == 0 ? (float) p.nextDouble() : 0f;
            }
        }
        float[] x = new float[rows * PIXELS];
        float[] y = new float[rows];
        for (int i = 0; i < rows; i++) {
            SplittableRandom r = new SplittableRandom(seed * 7_919 + first + i);
            int c = r.nextInt(CLASSES);
            y[i] = c;
            for (int j = 0; j < PIXELS; j++) {
                x[i * PIXELS + j] = prototypes[c][j] + (float) r.nextDouble(-0.6, 0.6);
            }
        }
        return new Batch(manager, new NDList(manager.create(x, new Shape(rows, PIXELS))),
                new NDList(manager.create(y, new Shape(rows))), rows, null, null, 0, 1);
    }

    private static float[] overRanks(Communicator comm, float[] values, ReduceOp op) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocateFrom(ValueLayout.JAVA_FLOAT, values);
            comm.allReduce(s, values.length, DataType.FLOAT32, op);
            return s.toArray(ValueLayout.JAVA_FLOAT);
        }
    }
}
