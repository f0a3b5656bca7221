package dev.panamax.lightgbm;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Data-parallel LightGBM training in one call: every rank of a {@link Communicator} passes its own rows, all
 * ranks get the same model.
 *
 * <pre>{@code
 * try (Communicator comm = Panamax.fromEnvironment()) {
 *     var data = new PanamaxLightGbm.LocalData(features, rows, columns, labels);   // this rank's rows
 *     String model = PanamaxLightGbm.train(comm, "objective=binary num_leaves=31", data, 100);
 * }
 * }</pre>
 *
 * <p>Before LightGBM starts, the ranks check that they agree (the same number of feature columns and the same
 * parameters, at least one row each) and every rank throws the same {@link IllegalArgumentException} naming the
 * ranks that differ: LightGBM itself would fail on one rank or train on misaligned histograms. The distributed
 * parameters are added where the caller did not give them: {@code tree_learner=data}, {@code pre_partition=true}
 * (each rank's rows are its own) and {@code num_machines} (which must match the communicator). A failure on one
 * rank during training aborts the communicator, so that the others throw at once, naming it, instead of waiting
 * for their timeouts; the communicator is then unusable (see {@link Communicator#abort}). To go on without a
 * lost rank instead, train with {@link ElasticLightGbm}.
 *
 * <p>LightGBM keeps its network per thread: the calling thread is the rank's for the whole call.
 */
public final class PanamaxLightGbm {
    private PanamaxLightGbm() {
    }

    /** Which network LightGBM's collectives run on. */
    public enum Network {
        /** Panamax's collectives over the communicator's transports ({@link CommunicatorNetwork}). */
        PANAMAX,
        /**
         * LightGBM's own TCP network ({@code LGBM_NetworkInit}) on 127.0.0.1, all ranks on this host, each
         * listening on a free port that the communicator tells the others: for comparisons only. It starts on
         * every rank or fails on every rank, naming the rank where it failed.
         */
        LIGHTGBM_SOCKETS
    }

    /**
     * One rank's training rows: {@code features} is a dense row-major {@code rows x columns} matrix, one label a
     * row (0 or 1 for a binary objective). The arrays are not copied; LightGBM copies them into its data set.
     */
    public record LocalData(double[] features, int rows, int columns, float[] labels) {
        public LocalData {
            Objects.requireNonNull(features, "features");
            Objects.requireNonNull(labels, "labels");
            if (rows < 0 || columns < 1) {
                throw new IllegalArgumentException("a " + rows + " x " + columns + " matrix: rows must be >= 0, "
                        + "columns >= 1");
            }
            if ((long) rows * columns != features.length) {
                throw new IllegalArgumentException(features.length + " feature values are not " + rows + " rows x "
                        + columns + " columns");
            }
            if (labels.length != rows) {
                throw new IllegalArgumentException(labels.length + " labels for " + rows + " rows");
            }
        }
    }

    /** Called on the training thread after each boosting iteration. */
    @FunctionalInterface
    public interface IterationListener {
        /**
         * @param iteration    1 for the first
         * @param elapsedNanos how long the iteration took on this rank
         * @param booster      the model so far (valid only during the call): to evaluate, not to close
         */
        void afterIteration(int iteration, long elapsedNanos, Booster booster);
    }

    /**
     * Trains {@code iterations} boosting rounds (fewer when LightGBM finds no split with a positive gain) over
     * Panamax and returns the model in LightGBM's text format, the same on every rank.
     *
     * @param params LightGBM parameters, {@code key=value} separated by spaces
     */
    public static String train(Communicator comm, String params, LocalData data, int iterations) {
        return train(comm, params, data, iterations, (i, nanos, booster) -> { }, Network.PANAMAX);
    }

    /** As {@link #train(Communicator, String, LocalData, int)}, calling {@code listener} after each iteration. */
    public static String train(Communicator comm, String params, LocalData data, int iterations,
            IterationListener listener) {
        return train(comm, params, data, iterations, listener, Network.PANAMAX);
    }

    /**
     * As {@link #train(Communicator, String, LocalData, int, IterationListener)}, with LightGBM's collectives on
     * {@code network}. With {@link Network#LIGHTGBM_SOCKETS} the communicator only agrees on ports, checks the
     * inputs and confirms that LightGBM's network started on every rank.
     */
    public static String train(Communicator comm, String params, LocalData data, int iterations,
            IterationListener listener, Network network) {
        return train(comm, params, data, iterations, listener, network, Checkpoint.NONE);
    }

    /** As the public train, continuing the model of {@code from} up to {@code iterations} in all. */
    static String train(Communicator comm, String params, LocalData data, int iterations,
            IterationListener listener, Network network, Checkpoint from) {
        checkArguments(comm, params, data, iterations, listener);
        Objects.requireNonNull(network, "network");
        try (Attempt attempt = new Attempt(from)) {
            return run(attempt, comm, distributedParameters(params, comm.size()), data, iterations, listener, network,
                    false);
        }
    }

    /**
     * Checks that the ranks agree, then trains {@code attempt} on {@code comm} with the distributed parameters
     * {@code full}, LightGBM's collectives on {@code network}. A failure on this rank wakes the peers at once: the
     * Panamax network aborts the communicator, or with {@code revokeOnFailure} revokes it (elastic training).
     */
    static String run(Attempt attempt, Communicator comm, String full, LocalData data, int iterations,
            IterationListener listener, Network network, boolean revokeOnFailure) {
        checkRanksAgree(comm, data, full);
        if (comm.size() == 1) {
            return attempt.run(data, full, iterations, listener);
        }
        try (CommunicatorNetwork panamax = revokeOnFailure ? CommunicatorNetwork.revokingOnFailure(comm)
                : new CommunicatorNetwork(comm)) {
            NetworkSession session;
            if (network == Network.PANAMAX) {
                session = NetworkSession.external(panamax);
            } else {
                session = LocalSocketNetwork.start(comm, panamax);
            }
            try (session) {
                return attempt.run(data, full, iterations, listener);
            } catch (RuntimeException | Error e) {
                // The peers are inside LightGBM's collectives: end their wait now, naming this rank.
                panamax.abandon(e);
                throw e;
            }
        }
    }

    static void checkArguments(Communicator comm, String params, LocalData data, int iterations,
            IterationListener listener) {
        Objects.requireNonNull(comm, "comm");
        Objects.requireNonNull(params, "params");
        Objects.requireNonNull(data, "data");
        Objects.requireNonNull(listener, "listener");
        if (iterations < 0) {
            throw new IllegalArgumentException("iterations must be >= 0: " + iterations);
        }
    }

    /** A model and the boosting iterations it holds; {@link #NONE} before the first. */
    record Checkpoint(String model, int iterations) {
        static final Checkpoint NONE = new Checkpoint(null, 0);
    }

    /**
     * Training on one communicator from a checkpoint. Its LightGBM objects outlive the network session, so
     * that after a failure the iterations it finished can still be saved ({@link #reached}).
     */
    static final class Attempt implements AutoCloseable {
        private final Checkpoint from;
        private Dataset dataset;
        private Booster booster;
        /** The iterations the booster holds, those of the checkpoint included. */
        private int iterations;

        Attempt(Checkpoint from) {
            this.from = from;
            this.iterations = from.iterations();
        }

        /**
         * Builds the data set and the booster and trains up to {@code total} iterations; with a checkpoint, as
         * LightGBM's own packages continue training: the checkpoint's raw scores are the rows' init scores and
         * its trees are merged before the new ones.
         */
        String run(LocalData data, String params, int total, IterationListener listener) {
            dataset = Dataset.fromMatrix(data.features(), data.rows(), data.columns(), params);
            dataset.setLabels(data.labels());
            if (from.model() == null) {
                booster = Booster.create(dataset, params);
            } else {
                try (Booster earlier = Booster.fromModelString(from.model())) {
                    double[] raw = earlier.predict(data.features(), data.rows(), data.columns(),
                            LightGbmC.PREDICT_RAW_SCORE, "");
                    dataset.setInitScores(groupedByClass(raw, data.rows()));
                    booster = Booster.create(dataset, params);
                    booster.mergeBefore(earlier);
                }
            }
            for (int i = from.iterations() + 1; i <= total; i++) {
                long start = System.nanoTime();
                boolean finished = booster.updateOneIteration();
                if (!finished) {
                    iterations = i;
                }
                listener.afterIteration(i, System.nanoTime() - start, booster);
                if (finished) {
                    break;
                }
            }
            return booster.modelString();
        }

        /** The iterations the booster holds (those of the checkpoint included). */
        int iterations() {
            return iterations;
        }

        /** The model of the iterations finished so far; after the network session closed. */
        Checkpoint reached() {
            if (booster == null || iterations == from.iterations()) {
                return from;
            }
            return new Checkpoint(booster.modelString(iterations), iterations);
        }

        @Override
        public void close() {
            try {
                if (booster != null) {
                    booster.close();
                }
            } finally {
                if (dataset != null) {
                    dataset.close();
                }
            }
        }
    }

    /** Raw scores as predicted (row by row, every class of a row together) as init scores (class by class). */
    static double[] groupedByClass(double[] raw, int rows) {
        int classes = raw.length / rows;
        if (classes == 1) {
            return raw;
        }
        double[] out = new double[raw.length];
        for (int i = 0; i < rows; i++) {
            for (int c = 0; c < classes; c++) {
                out[c * rows + i] = raw[i * classes + c];
            }
        }
        return out;
    }

    /** {@code params} with the distributed settings added where missing; checks a given {@code num_machines}. */
    static String distributedParameters(String params, int ranks) {
        Map<String, String> given = new LinkedHashMap<>();
        for (String token : params.trim().split("\\s+")) {
            if (token.isEmpty()) {
                continue;
            }
            int eq = token.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("LightGBM parameter \"" + token + "\" is not key=value");
            }
            given.put(token.substring(0, eq).trim(), token.substring(eq + 1).trim());
        }
        for (String key : new String[] {"num_machines", "num_machine"}) {
            String v = given.get(key);
            if (v != null && !v.equals(Integer.toString(ranks))) {
                throw new IllegalArgumentException(key + "=" + v + " but the communicator has " + ranks + " ranks");
            }
        }
        if (ranks == 1) {
            return params.trim();
        }
        StringBuilder out = new StringBuilder(params.trim());
        if (!hasAny(given, "tree_learner", "tree", "tree_type", "tree_learner_type")) {
            out.append(" tree_learner=data");
        }
        if (!hasAny(given, "pre_partition", "is_pre_partition")) {
            out.append(" pre_partition=true");
        }
        if (!hasAny(given, "num_machines", "num_machine")) {
            out.append(" num_machines=").append(ranks);
        }
        return out.toString().trim();
    }

    private static boolean hasAny(Map<String, String> given, String... keys) {
        for (String k : keys) {
            if (given.containsKey(k)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Every rank's column count, row count and parameter hash, gathered; throws on every rank alike when they
     * do not fit together.
     */
    private static void checkRanksAgree(Communicator comm, LocalData data, String params) {
        int n = comm.size();
        long[] all = new long[3 * n];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mine = arena.allocateFrom(ValueLayout.JAVA_LONG, data.columns(), data.rows(),
                    params.hashCode());
            MemorySegment every = arena.allocate(ValueLayout.JAVA_LONG, 3L * n);
            comm.allGather(mine, every, 3, DataType.INT64);
            MemorySegment.copy(every, ValueLayout.JAVA_LONG, 0, all, 0, all.length);
        }
        StringBuilder columns = new StringBuilder();
        StringBuilder empty = new StringBuilder();
        StringBuilder paramsDiffer = new StringBuilder();
        for (int r = 0; r < n; r++) {
            columns.append(r == 0 ? "" : ", ").append("rank ").append(r).append(": ").append(all[3 * r]);
            if (all[3 * r] != all[0]) {
                columns.append(" (differs)");
            }
            if (all[3 * r + 1] == 0) {
                empty.append(empty.isEmpty() ? "" : ", ").append(r);
            }
            if (all[3 * r + 2] != all[2]) {
                paramsDiffer.append(paramsDiffer.isEmpty() ? "" : ", ").append(r);
            }
        }
        if (columns.toString().contains("(differs)")) {
            throw new IllegalArgumentException("LightGBM training: the ranks have different numbers of feature "
                    + "columns (" + columns + "); every rank needs the same columns");
        }
        if (!paramsDiffer.isEmpty()) {
            throw new IllegalArgumentException("LightGBM training: the parameters of rank(s) " + paramsDiffer
                    + " differ from rank 0's; every rank must pass the same parameters");
        }
        if (!empty.isEmpty()) {
            throw new IllegalArgumentException("LightGBM training: rank(s) " + empty + " have no rows; LightGBM "
                    + "needs at least one row on every rank");
        }
    }
}
