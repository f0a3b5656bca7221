package dev.panamax.bench.examples;

import dev.panamax.bench.examples.MlpExample.Config;
import dev.panamax.bench.examples.MlpExample.Dataset;
import dev.panamax.bench.examples.MlpExample.Mlp;
import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.memory.DataType;
import dev.panamax.ml.ElasticTraining;
import dev.panamax.ml.SyncPolicy;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Training that survives a lost rank ({@link ElasticTraining}): the perceptron of {@link MlpExample} on
 * the processes of a job, each global batch split over the ranks there are at the moment. One rank
 * kills itself with SIGKILL in the middle of a step; the survivors shrink, roll back to the last step
 * they all completed and go on; later they grow back to the job's size with a process that joins
 * ({@code --join}, started by {@code scripts/elastic-example}) and receives the model from rank 0.
 * The global batches do not change, so the loss curve goes on as that of one process training alone,
 * which rank 0 prints beside it: {@code step S ranks N loss elastic=<a> single=<b>}, each change of
 * the communicator, and last {@code loss elastic=<a> single=<b>}.
 *
 * <p>Options: {@code --steps N} (300), {@code --kill-rank R} (2; -1: none), {@code --kill-step S} (90),
 * {@code --regrow-step S} (180; -1: none), {@code --join} (this process replaces a lost rank).
 */
public final class ElasticExample {
    /** The model and data of MlpExample's default, with a global batch that 2, 3 and 4 ranks divide. */
    static final Config CONFIG = new Config(16, 32, 4096, 48, 300, 0.5, 42);
    private static final int EVERY = 30;

    private ElasticExample() {
    }

    /** What a run reports: every {@link #EVERY} steps the step and rank count, and the loss; the final loss. */
    record Run(List<String> curve, List<Double> losses, double finalLoss, List<ElasticTraining.Event> events) {
    }

    /** The sample order of every epoch, drawn in sequence from the seed as MlpExample draws them. */
    private static final class Epochs {
        private final SplittableRandom random;
        private final List<int[]> orders = new ArrayList<>();
        private final int samples;

        Epochs(Config c) {
            random = new SplittableRandom(c.seed() ^ 0x5DEECE66DL);
            samples = c.samples();
        }

        int[] order(int epoch) {
            while (orders.size() <= epoch) {
                orders.add(MlpExample.shuffled(samples, random));
            }
            return orders.get(epoch);
        }
    }

    /**
     * Trains on {@code comm} (a joined process: {@code joined}); job rank {@code killRank} kills itself in
     * step {@code killStep}; at {@code regrowStep} the ranks grow back to {@code jobSize}.
     */
    static Run train(Communicator comm, Config c, boolean joined, int jobRank, int killRank, int killStep,
            int regrowStep, int jobSize) {
        Dataset data = Dataset.synthetic(c);
        Epochs epochs = new Epochs(c);
        int perEpoch = c.samples() / c.globalBatch();
        List<String> curve = new ArrayList<>();
        List<Double> losses = new ArrayList<>();
        try (Mlp net = new Mlp(c); Arena arena = Arena.ofShared()) {
            double[][] params = net.parametersInBackwardOrder();
            long bytes = 0;
            for (double[] p : params) {
                bytes += 8L * p.length;
            }
            MemorySegment state = arena.allocate(bytes, 64);
            save(params, state);
            ElasticTraining.Builder b = ElasticTraining.builder(comm).state(state).joined(joined)
                    .synchronizer(s -> s.policy(SyncPolicy.WFBP));
            for (int t = 0; t < net.grads.length; t++) {
                b.gradient(net.grads[t], net.sizes[t], DataType.FLOAT64);
            }
            try (ElasticTraining training = b.build()) {
                load(state, params);
                while (training.step() < c.steps()) {
                    int s = (int) training.step();
                    try {
                        if (s == regrowStep && training.communicator().size() < jobSize) {
                            training.grow(jobSize - training.communicator().size());
                            load(state, params);
                        }
                        Communicator now = training.communicator();
                        int share = c.globalBatch() / now.size();
                        int from = (s % perEpoch) * c.globalBatch() + now.rank() * share;
                        boolean dies = jobRank == killRank && s == killStep;
                        net.backward(data, epochs.order(s / perEpoch), from, from + share, t -> {
                            training.markReady(t);
                            if (dies && t == 1) {
                                killThisProcess(); // with gradient 0's all-reduce under way
                            }
                        });
                        training.awaitAll();
                        net.step(c.learningRate());
                        save(params, state);
                        training.commit();
                        if ((s + 1) % EVERY == 0) {
                            double loss = net.loss(data);
                            losses.add(loss);
                            curve.add("step " + (s + 1) + " ranks " + now.size());
                        }
                    } catch (CollectiveException e) {
                        training.recover();
                        load(state, params);
                    }
                }
                return new Run(curve, losses, net.loss(data), training.events());
            }
        }
    }

    private static void save(double[][] params, MemorySegment state) {
        long off = 0;
        for (double[] p : params) {
            MemorySegment.copy(p, 0, state, ValueLayout.JAVA_DOUBLE, off, p.length);
            off += 8L * p.length;
        }
    }

    private static void load(MemorySegment state, double[][] params) {
        long off = 0;
        for (double[] p : params) {
            MemorySegment.copy(state, ValueLayout.JAVA_DOUBLE, off, p, 0, p.length);
            off += 8L * p.length;
        }
    }

    /** SIGKILL, as a crash or the OOM killer would end the process: no cleanup, no goodbye. */
    static void killThisProcess() {
        System.out.println("rank killing itself with SIGKILL");
        System.out.flush();
        try {
            new ProcessBuilder("kill", "-KILL", Long.toString(ProcessHandle.current().pid())).start().waitFor();
            Thread.sleep(10_000);
        } catch (IOException | InterruptedException e) {
            Runtime.getRuntime().halt(137);
        }
        Runtime.getRuntime().halt(137);
    }

    public static void main(String[] args) {
        Config c = CONFIG;
        int killRank = 2;
        int killStep = 90;
        int regrowStep = 180;
        boolean join = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--steps" -> c = new Config(c.features(), c.hidden(), c.samples(), c.globalBatch(),
                        Integer.parseInt(args[++i]), c.learningRate(), c.seed());
                case "--kill-rank" -> killRank = Integer.parseInt(args[++i]);
                case "--kill-step" -> killStep = Integer.parseInt(args[++i]);
                case "--regrow-step" -> regrowStep = Integer.parseInt(args[++i]);
                case "--join" -> join = true;
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + " (known: --steps, --kill-rank, --kill-step, --regrow-step, --join)");
            }
        }
        int jobSize = Integer.parseInt(System.getenv().getOrDefault("PANAMAX_WORLD_SIZE", "1"));
        Communicator comm = join ? Panamax.builder().join() : Panamax.fromEnvironment();
        int jobRank = join ? -1 : comm.rank();
        try {
            Run run = train(comm, c, join, jobRank, killRank, killStep, regrowStep, jobSize);
            if (join) {
                System.out.printf(Locale.ROOT, "joined, trained to the end: loss %.10f%n", run.finalLoss());
                return;
            }
            if (comm.rank() != 0) {
                return;
            }
            List<Communicator> one = Panamax.local(1);
            Run single;
            try {
                single = train(one.getFirst(), c, false, 0, -1, -1, -1, 1);
            } finally {
                one.getFirst().close();
            }
            for (ElasticTraining.Event e : run.events()) {
                System.out.printf(Locale.ROOT, "%s at step %d: %d -> %d ranks in %.0f ms%n", e.kind(), e.step(),
                        e.fromSize(), e.toSize(), e.seconds() * 1e3);
            }
            for (int k = 0; k < run.curve().size(); k++) {
                System.out.printf(Locale.ROOT, "%s loss elastic=%.10f single=%.10f%n", run.curve().get(k),
                        run.losses().get(k), single.losses().get(k));
            }
            System.out.printf(Locale.ROOT, "loss elastic=%.10f single=%.10f%n", run.finalLoss(), single.finalLoss());
        } finally {
            comm.close();
        }
    }
}
