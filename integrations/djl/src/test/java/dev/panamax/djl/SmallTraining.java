package dev.panamax.djl;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
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
import dev.panamax.ml.SyncPolicy;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.IntConsumer;

/**
 * A small classifier trained data-parallel on one rank of a communicator, for the tests: an MLP (64 inputs, 32
 * hidden, 4 classes) on synthetic rows whose class is the arg max of a fixed linear map, a global batch split
 * evenly over the ranks (row i is the same for every rank count), plain SGD.
 */
final class SmallTraining {
    static final int FEATURES = 64;
    static final int CLASSES = 4;

    static {
        // One PyTorch thread per rank: ranks share this JVM's or this machine's CPUs, and the sums are reproducible.
        System.setProperty("ai.djl.pytorch.num_threads", "1");
        System.setProperty("ai.djl.pytorch.num_interop_threads", "1");
        System.setProperty("ai.djl.offline", "true");
    }

    /** What one rank ends with: its local loss at each step, its final parameters, the listener's counts. */
    record Outcome(float[] localLosses, float[] parameters, DataParallelTraining.Stats stats,
            List<DataParallelTraining.Recovery> recoveries) {
    }

    private SmallTraining() {
    }

    /**
     * Trains {@code steps} steps of {@code globalBatch} rows on this rank's share; parameters are initialized
     * from {@code initSeed} (which may differ per rank: the broadcast makes them equal). {@code afterStep} sees
     * the step number after each step.
     */
    static Outcome train(Communicator comm, int globalBatch, int steps, long initSeed, IntConsumer afterStep) {
        return train(comm, globalBatch, steps, initSeed, afterStep, false);
    }

    /** As above; with {@code copies}, every gradient goes through a copy buffer instead of its own memory. */
    static Outcome train(Communicator comm, int globalBatch, int steps, long initSeed, IntConsumer afterStep,
            boolean copies) {
        return train(comm, globalBatch, steps, initSeed, afterStep, copies, false);
    }

    /**
     * As above; {@code elastic}: the listener's elastic mode, each rank keeping the rows of its rank at the start
     * (a lost rank's rows are dropped from the global batch).
     */
    static Outcome train(Communicator comm, int globalBatch, int steps, long initSeed, IntConsumer afterStep,
            boolean copies, boolean elastic) {
        int per = globalBatch / comm.size();
        if (per * comm.size() != globalBatch) {
            throw new IllegalArgumentException(globalBatch + " rows do not split evenly over " + comm.size());
        }
        Engine.getInstance().setRandomSeed((int) initSeed);
        float[] losses = new float[steps];
        try (Model model = Model.newInstance("small-mlp")) {
            model.setBlock(new SequentialBlock()
                    .add(Blocks.batchFlattenBlock(FEATURES))
                    .add(Linear.builder().setUnits(32).build())
                    .add(Activation::relu)
                    .add(Linear.builder().setUnits(CLASSES).build()));
            DataParallelTraining dp = copies ? DataParallelTraining.copyingEveryGradient(comm)
                    : elastic ? DataParallelTraining.elastic(comm, SyncPolicy.ASC_WFBP)
                    : DataParallelTraining.over(comm);
            int jobRank = comm.rank();
            int[] step = {0};
            DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optOptimizer(Optimizer.sgd().setLearningRateTracker(Tracker.fixed(0.5f)).build())
                    .addTrainingListeners(dp, new TrainingListenerAdapter() {
                        @Override
                        public void onTrainingBatch(Trainer trainer, BatchData batch) {
                            NDList labels = batch.getLabels().values().iterator().next();
                            NDList predictions = batch.getPredictions().values().iterator().next();
                            losses[step[0]] = trainer.getLoss().evaluate(labels, predictions).getFloat();
                        }
                    });
            try (Trainer trainer = model.newTrainer(config)) {
                dp.initialize(trainer, new Shape(per, FEATURES));
                // Batch dp.step(): in elastic mode a rank skips the step it failed in when another completed it.
                while (dp.step() < steps) {
                    step[0] = (int) dp.step();
                    try (NDManager batchManager = trainer.getManager().newSubManager()) {
                        int first = step[0] * globalBatch + jobRank * per;
                        Batch batch = batch(batchManager, first, per);
                        EasyTrain.trainBatch(trainer, batch);
                        trainer.step();
                    }
                    afterStep.accept(step[0] + 1);
                }
                DataParallelTraining.Stats stats = dp.stats();
                return new Outcome(losses, parameters(trainer), stats, dp.recoveries());
            } finally {
                dp.close();
            }
        }
    }

    /** Rows {@code [first, first + rows)} as a batch. */
    static Batch batch(NDManager manager, int first, int rows) {
        float[] x = new float[rows * FEATURES];
        float[] y = new float[rows];
        SplittableRandom weights = new SplittableRandom(99);
        float[][] w = new float[CLASSES][FEATURES];
        for (float[] row : w) {
            for (int j = 0; j < FEATURES; j++) {
                row[j] = (float) weights.nextDouble(-1, 1);
            }
        }
        for (int i = 0; i < rows; i++) {
            SplittableRandom r = new SplittableRandom(1_000_003L * (first + i) + 7);
            for (int j = 0; j < FEATURES; j++) {
                x[i * FEATURES + j] = (float) r.nextDouble(-1, 1);
            }
            int best = 0;
            double bestScore = Double.NEGATIVE_INFINITY;
            for (int c = 0; c < CLASSES; c++) {
                double score = 0;
                for (int j = 0; j < FEATURES; j++) {
                    score += w[c][j] * x[i * FEATURES + j];
                }
                if (score > bestScore) {
                    bestScore = score;
                    best = c;
                }
            }
            y[i] = best;
        }
        NDArray data = manager.create(x, new Shape(rows, FEATURES));
        NDArray labels = manager.create(y, new Shape(rows));
        return new Batch(manager, new NDList(data), new NDList(labels), rows, null, null, 0, 1);
    }

    /** Every parameter's values, in the block's order, one after the other. */
    static float[] parameters(Trainer trainer) {
        List<float[]> parts = new ArrayList<>();
        int total = 0;
        for (var p : trainer.getModel().getBlock().getParameters()) {
            float[] v = p.getValue().getArray().toFloatArray();
            parts.add(v);
            total += v.length;
        }
        float[] all = new float[total];
        int at = 0;
        for (float[] v : parts) {
            System.arraycopy(v, 0, all, at, v.length);
            at += v.length;
        }
        return all;
    }
}
