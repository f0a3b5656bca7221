package dev.panamax.spark;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import org.apache.spark.api.java.JavaRDD;

import java.io.Serializable;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;

/**
 * Binary logistic regression trained in one Spark barrier stage, the driver out of the data path: every task
 * keeps its partition's rows, and each iteration all-reduces the loss's sums over the tasks through Panamax;
 * every task then takes the same step (the all-reduce leaves the same bits on every rank, so every task makes
 * the same decisions), and the driver only collects the final model. MLlib's {@code LogisticRegression} instead
 * aggregates through the driver and broadcasts the coefficients at every iteration.
 *
 * <p>It minimizes what MLlib minimizes with {@code standardization=false} and {@code elasticNetParam=0}: the
 * mean log-loss plus {@code regParam / 2 * |w|^2}, the intercept not regularized. Two solvers:
 * <ul>
 *   <li>{@link Solver#NEWTON}: the gradient and the {@code (d+1)^2} Hessian all-reduced per iteration
 *       ({@code (d+1)^2 + d + 2} doubles), a handful of iterations; for up to a few hundred features.
 *   <li>{@link Solver#LBFGS}: limited-memory BFGS (10 corrections) with a backtracking line search, its vectors
 *       split by coordinates over the tasks: each pass over the rows reduce-scatters the gradient, each
 *       iteration all-gathers the search direction (so each moves {@code d + 1} doubles), and each task keeps
 *       and updates only its {@code 1/p} of the history ({@code 2 * 10 * (d+1) / p} doubles); every task also
 *       holds the whole model, which its rows need; for wide, sparse models (millions of features).
 * </ul>
 * {@link Solver#AUTO} (the default) picks Newton up to {@value #NEWTON_MAX_FEATURES} features and L-BFGS above.
 * Labels are 0 or 1; rows are dense or sparse ({@link Row}).
 */
public final class PanamaxLogisticRegression implements Serializable {
    private static final long serialVersionUID = 1L;

    /** {@link Solver#AUTO} uses Newton's method up to this many features. */
    public static final int NEWTON_MAX_FEATURES = 200;
    /** L-BFGS keeps this many (step, gradient change) pairs, as MLlib does. */
    static final int LBFGS_CORRECTIONS = 10;
    /** A line search gives up after this many halvings: the objective cannot fall within double precision. */
    private static final int MAX_LINE_SEARCH_STEPS = 30;

    private double regParam;
    private int maxIterations = 100;
    private double tolerance = 1e-10;
    private Solver solver = Solver.AUTO;

    /** How the model is fitted; see the class comment. */
    public enum Solver { AUTO, NEWTON, LBFGS }

    /**
     * One training row: a label (0 or 1) and its features, dense ({@link #dense}) or sparse ({@link #sparse}).
     * Immutable; the arrays given are copied.
     */
    public static final class Row implements Serializable {
        private static final long serialVersionUID = 1L;

        private final double label;
        private final int dimension;
        /** Strictly increasing feature indices, or null for a dense row (index i holds values[i]). */
        private final int[] indices;
        private final double[] values;

        private Row(double label, int dimension, int[] indices, double[] values) {
            if (label != 0 && label != 1) {
                throw new IllegalArgumentException("a label is 0 or 1: " + label);
            }
            this.label = label;
            this.dimension = dimension;
            this.indices = indices;
            this.values = values;
        }

        /** A row whose feature j is {@code features[j]}. */
        public static Row dense(double label, double[] features) {
            Objects.requireNonNull(features, "features");
            return new Row(label, features.length, null, features.clone());
        }

        /**
         * A row of {@code dimension} features, zero except feature {@code indices[i]}, which is {@code values[i]};
         * the indices strictly increasing, each in {@code [0, dimension)}.
         */
        public static Row sparse(double label, int dimension, int[] indices, double[] values) {
            Objects.requireNonNull(indices, "indices");
            Objects.requireNonNull(values, "values");
            if (dimension < 0) {
                throw new IllegalArgumentException("dimension must be >= 0: " + dimension);
            }
            if (indices.length != values.length) {
                throw new IllegalArgumentException(indices.length + " indices and " + values.length + " values");
            }
            for (int i = 0; i < indices.length; i++) {
                if (indices[i] < 0 || indices[i] >= dimension || (i > 0 && indices[i] <= indices[i - 1])) {
                    throw new IllegalArgumentException("indices must increase strictly within [0, " + dimension
                            + "): index " + indices[i] + " at position " + i);
                }
            }
            return new Row(label, dimension, indices.clone(), values.clone());
        }

        public double label() {
            return label;
        }

        /** The number of features, zeros included. */
        public int dimension() {
            return dimension;
        }

        /** The number of stored features (all of them for a dense row). */
        public int nonZeroCount() {
            return values.length;
        }

        /** The feature index of stored entry {@code i}. */
        public int index(int i) {
            return indices == null ? i : indices[i];
        }

        /** The value of stored entry {@code i}. */
        public double value(int i) {
            return values[i];
        }

        /** {@code w[0..dimension) . features}. */
        double dot(double[] w) {
            double z = 0;
            if (indices == null) {
                for (int j = 0; j < values.length; j++) {
                    z += w[j] * values[j];
                }
            } else {
                for (int i = 0; i < values.length; i++) {
                    z += w[indices[i]] * values[i];
                }
            }
            return z;
        }

        /** {@code g[j] += scale * feature j} for every stored feature. */
        void addScaled(double[] g, double scale) {
            if (indices == null) {
                for (int j = 0; j < values.length; j++) {
                    g[j] += scale * values[j];
                }
            } else {
                for (int i = 0; i < values.length; i++) {
                    g[indices[i]] += scale * values[i];
                }
            }
        }
    }

    /** The fitted model; {@code iterations} counts the solver's iterations (steps taken, or tried last). */
    public record Model(double intercept, double[] coefficients, int iterations) implements Serializable {
        /** The probability of label 1 for {@code features}. */
        public double probability(double[] features) {
            double z = intercept;
            for (int j = 0; j < coefficients.length; j++) {
                z += coefficients[j] * features[j];
            }
            return 1 / (1 + Math.exp(-z));
        }
    }

    /** L2 regularization of the coefficients (not the intercept); default 0. */
    public PanamaxLogisticRegression regParam(double regParam) {
        if (!(regParam >= 0)) {
            throw new IllegalArgumentException("regParam must be >= 0: " + regParam);
        }
        this.regParam = regParam;
        return this;
    }

    /** At most this many iterations (default 100). */
    public PanamaxLogisticRegression maxIterations(int maxIterations) {
        if (maxIterations < 1) {
            throw new IllegalArgumentException("maxIterations must be >= 1: " + maxIterations);
        }
        this.maxIterations = maxIterations;
        return this;
    }

    /** Stop when no component of the objective's gradient exceeds this in magnitude (default 1e-10). */
    public PanamaxLogisticRegression tolerance(double tolerance) {
        if (!(tolerance >= 0)) {
            throw new IllegalArgumentException("tolerance must be >= 0: " + tolerance);
        }
        this.tolerance = tolerance;
        return this;
    }

    /** The solver (default {@link Solver#AUTO}). */
    public PanamaxLogisticRegression solver(Solver solver) {
        this.solver = Objects.requireNonNull(solver, "solver");
        return this;
    }

    /**
     * Fits the model on {@code rows}: one barrier stage with a task per partition (the cluster needs a slot for
     * each at once, as for any barrier stage).
     */
    public Model fit(JavaRDD<Row> rows) {
        PanamaxLogisticRegression settings = this;
        List<Model> models = PanamaxBarrier.mapPartitions(rows, (ctx, partition) -> {
            Model m = settings.train(PanamaxBarrier.communicator(ctx), partition);
            return (ctx.partitionId() == 0 ? List.of(m) : List.<Model>of()).iterator();
        }).collect();
        return models.getFirst();
    }

    /** Trains on one task's rows; the same model on every rank. */
    Model train(Communicator comm, Iterator<Row> partition) {
        List<Row> rows = new ArrayList<>();
        partition.forEachRemaining(rows::add);
        int d = dimension(comm, rows);
        boolean newton = solver == Solver.NEWTON || (solver == Solver.AUTO && d <= NEWTON_MAX_FEATURES);
        try (Arena arena = Arena.ofConfined()) {
            return newton ? newton(comm, arena, rows, d) : lbfgs(new ShardedObjective(comm, arena, rows, d));
        }
    }

    /** Newton's method: the exact Hessian, all-reduced with the gradient. */
    private Model newton(Communicator comm, Arena arena, List<Row> rows, int d) {
        int n = d + 1; // the intercept is coordinate d
        double[] w = new double[n];
        // gradient (n), Hessian's lower triangle in an n * n array, row count: summed over every task's rows
        int length = n + n * n + 1;
        MemorySegment sums = arena.allocate(ValueLayout.JAVA_DOUBLE, length);
        double[] local = new double[length];
        int iterations = 0;
        while (iterations < maxIterations) {
            iterations++;
            Arrays.fill(local, 0);
            for (Row r : rows) {
                double p = sigmoid(w[d] + r.dot(w));
                double residual = p - r.label();
                double weight = p * (1 - p);
                int stored = r.nonZeroCount();
                // Stored entries in increasing index order, then the intercept's constant 1 at index d.
                for (int a = 0; a <= stored; a++) {
                    int j = a < stored ? r.index(a) : d;
                    double xj = a < stored ? r.value(a) : 1;
                    local[j] += residual * xj;
                    double wx = weight * xj;
                    for (int b = 0; b <= a; b++) {
                        int k = b < stored ? r.index(b) : d;
                        local[n + j * n + k] += wx * (b < stored ? r.value(b) : 1);
                    }
                }
                local[length - 1]++;
            }
            MemorySegment.copy(local, 0, sums, ValueLayout.JAVA_DOUBLE, 0, length);
            comm.allReduce(sums, length, DataType.FLOAT64, ReduceOp.SUM);
            MemorySegment.copy(sums, ValueLayout.JAVA_DOUBLE, 0, local, 0, length);
            double count = local[length - 1];
            double[] gradient = new double[n];
            double[][] hessian = new double[n][n];
            double largest = 0;
            for (int j = 0; j < n; j++) {
                gradient[j] = local[j] / count + (j < d ? regParam * w[j] : 0);
                largest = Math.max(largest, Math.abs(gradient[j]));
                for (int k = 0; k <= j; k++) {
                    hessian[j][k] = local[n + j * n + k] / count + (j == k && j < d ? regParam : 0);
                    hessian[k][j] = hessian[j][k];
                }
            }
            if (largest <= tolerance) {
                break;
            }
            double[] step = solve(hessian, gradient);
            for (int j = 0; j < n; j++) {
                w[j] -= step[j];
            }
        }
        return new Model(w[d], Arrays.copyOf(w, d), iterations);
    }

    /**
     * The objective, split by coordinates for L-BFGS: every rank holds the whole point (its rows touch any
     * coordinate) but the gradient, the search direction and the optimizer's history only for its shard of the
     * coordinates, {@code [lo, hi)} of the {@code d + 1} (the intercept last). The gradient's sums are
     * reduce-scattered, each rank's shard of the direction all-gathered, and the inner products the algorithm
     * needs summed over the shards by all-reduces of a few scalars. So each task does {@code 1/p} of the
     * optimizer's vector work and keeps {@code 1/p} of its history, instead of every task repeating all of it.
     */
    private final class ShardedObjective {
        private final Communicator comm;
        private final List<Row> rows;
        private final int d;
        private final int lo;
        private final int hi;
        private final long[] counts;
        private final double rowCount;
        /** The whole model's length: the gradient's sums before the reduce-scatter, the direction after. */
        private final MemorySegment whole;
        private final MemorySegment shard;
        private final MemorySegment scalars;
        private final double[] sums;

        ShardedObjective(Communicator comm, Arena arena, List<Row> rows, int d) {
            this.comm = comm;
            this.rows = rows;
            this.d = d;
            int n = d + 1;
            int size = comm.size();
            counts = new long[size];
            for (int r = 0; r < size; r++) {
                counts[r] = (long) n * (r + 1) / size - (long) n * r / size;
            }
            lo = (int) ((long) n * comm.rank() / size);
            hi = (int) ((long) n * (comm.rank() + 1) / size);
            whole = arena.allocate(ValueLayout.JAVA_DOUBLE, n);
            shard = arena.allocate(ValueLayout.JAVA_DOUBLE, Math.max(1, hi - lo));
            scalars = arena.allocate(ValueLayout.JAVA_DOUBLE, 3);
            sums = new double[n];
            rowCount = sum(rows.size());
        }

        int dimension() {
            return d;
        }

        int shardLength() {
            return hi - lo;
        }

        /**
         * The objective at {@code w} (the whole point, the same on every rank); its gradient's shard goes to
         * {@code gradient}. One pass over this task's rows, a reduce-scatter and an all-reduce of two scalars.
         */
        double evaluate(double[] w, double[] gradient) {
            Arrays.fill(sums, 0);
            double loss = 0;
            for (Row r : rows) {
                double z = w[d] + r.dot(w);
                double residual = sigmoid(z) - r.label();
                r.addScaled(sums, residual);
                sums[d] += residual;
                // log(1 + e^z) - y z, without overflow for large |z|
                loss += (z > 0 ? z + Math.log1p(Math.exp(-z)) : Math.log1p(Math.exp(z))) - r.label() * z;
            }
            MemorySegment.copy(sums, 0, whole, ValueLayout.JAVA_DOUBLE, 0, sums.length);
            comm.reduceScatterV(whole, shard, counts, DataType.FLOAT64, ReduceOp.SUM);
            MemorySegment.copy(shard, ValueLayout.JAVA_DOUBLE, 0, gradient, 0, hi - lo);
            double penalty = 0;
            for (int j = lo; j < hi; j++) {
                gradient[j - lo] /= rowCount;
                if (j < d) {
                    gradient[j - lo] += regParam * w[j];
                    penalty += w[j] * w[j];
                }
            }
            scalars.set(ValueLayout.JAVA_DOUBLE, 0, loss);
            scalars.set(ValueLayout.JAVA_DOUBLE, 8, penalty);
            comm.allReduce(scalars, 2, DataType.FLOAT64, ReduceOp.SUM);
            return scalars.get(ValueLayout.JAVA_DOUBLE, 0) / rowCount
                    + regParam / 2 * scalars.get(ValueLayout.JAVA_DOUBLE, 8);
        }

        /** Every rank's shard of a vector, gathered into the whole vector (the same on every rank). */
        void gather(double[] part, double[] result) {
            MemorySegment.copy(part, 0, shard, ValueLayout.JAVA_DOUBLE, 0, hi - lo);
            comm.allGatherV(shard, whole, counts, DataType.FLOAT64);
            MemorySegment.copy(whole, ValueLayout.JAVA_DOUBLE, 0, result, 0, result.length);
        }

        /** The inner product of two sharded vectors. */
        double dot(double[] a, double[] b) {
            return sum(PanamaxLogisticRegression.dot(a, b, hi - lo));
        }

        /** The sum of {@code x} over the ranks. */
        double sum(double x) {
            scalars.set(ValueLayout.JAVA_DOUBLE, 0, x);
            comm.allReduce(scalars, 1, DataType.FLOAT64, ReduceOp.SUM);
            return scalars.get(ValueLayout.JAVA_DOUBLE, 0);
        }

        /** The sums of three values over the ranks, in one all-reduce. */
        double[] sum(double a, double b, double c) {
            scalars.set(ValueLayout.JAVA_DOUBLE, 0, a);
            scalars.set(ValueLayout.JAVA_DOUBLE, 8, b);
            scalars.set(ValueLayout.JAVA_DOUBLE, 16, c);
            comm.allReduce(scalars, 3, DataType.FLOAT64, ReduceOp.SUM);
            return new double[] {scalars.get(ValueLayout.JAVA_DOUBLE, 0), scalars.get(ValueLayout.JAVA_DOUBLE, 8),
                scalars.get(ValueLayout.JAVA_DOUBLE, 16)};
        }

        /** The largest magnitude of a sharded vector's components. */
        double largestMagnitude(double[] v) {
            double largest = 0;
            for (int j = 0; j < hi - lo; j++) {
                largest = Math.max(largest, Math.abs(v[j]));
            }
            scalars.set(ValueLayout.JAVA_DOUBLE, 0, largest);
            comm.allReduce(scalars, 1, DataType.FLOAT64, ReduceOp.MAX);
            return scalars.get(ValueLayout.JAVA_DOUBLE, 0);
        }
    }

    /**
     * Limited-memory BFGS (Nocedal and Wright, Algorithm 7.4, the two-loop recursion) on the sharded objective,
     * with a backtracking line search on the Armijo condition. Near the optimum, where the objective's changes
     * fall below its rounding, a step is also accepted when the objective has not risen beyond rounding and the
     * slope along the direction has shrunk (the approximate Wolfe condition of Hager and Zhang), so that the
     * gradient can still be driven down. Every decision rests on all-reduced values, the same bits on every
     * rank, so every rank takes the same branches.
     */
    private Model lbfgs(ShardedObjective objective) {
        int d = objective.dimension();
        int n = d + 1;
        int k = objective.shardLength();
        int m = LBFGS_CORRECTIONS;
        double[][] s = new double[m][];
        double[][] y = new double[m][];
        double[] rho = new double[m];
        double[] alpha = new double[m];
        double gamma = 1;
        int stored = 0;
        int newest = -1;
        double[] w = new double[n];
        double[] wNext = new double[n];
        double[] direction = new double[n];
        double[] g = new double[k];
        double[] gNext = new double[k];
        double[] q = new double[k];
        double[] sSpare = new double[k];
        double[] ySpare = new double[k];
        double f = objective.evaluate(w, g);
        int iterations = 0;
        while (iterations < maxIterations && objective.largestMagnitude(g) > tolerance) {
            iterations++;
            // q = -H g by the two-loop recursion over this rank's shard; H starts as gamma times the identity
            for (int j = 0; j < k; j++) {
                q[j] = -g[j];
            }
            for (int i = 0; i < stored; i++) {
                int c = Math.floorMod(newest - i, m);
                alpha[c] = rho[c] * objective.dot(s[c], q);
                axpy(-alpha[c], y[c], q);
            }
            double step = 1;
            if (stored > 0) {
                for (int j = 0; j < k; j++) {
                    q[j] *= gamma;
                }
                for (int i = stored - 1; i >= 0; i--) {
                    int c = Math.floorMod(newest - i, m);
                    double beta = rho[c] * objective.dot(y[c], q);
                    axpy(alpha[c] - beta, s[c], q);
                }
            } else {
                step = Math.min(1, 1 / Math.sqrt(objective.dot(g, g)));
            }
            double slope = objective.dot(g, q);
            objective.gather(q, direction);
            double fNext = Double.NaN;
            boolean accepted = false;
            for (int tries = 0; tries < MAX_LINE_SEARCH_STEPS && !accepted; tries++) {
                for (int j = 0; j < n; j++) {
                    wNext[j] = w[j] + step * direction[j];
                }
                fNext = objective.evaluate(wNext, gNext);
                accepted = fNext <= f + 1e-4 * step * slope || (fNext <= f + 1e-14 * Math.abs(f)
                        && Math.abs(objective.dot(gNext, q)) <= 0.9 * -slope);
                if (!accepted) {
                    step /= 2;
                }
            }
            if (!accepted) {
                break; // no step lowers the objective within double precision: as converged as it gets
            }
            int lo = objective.lo;
            for (int j = 0; j < k; j++) {
                sSpare[j] = wNext[lo + j] - w[lo + j];
                ySpare[j] = gNext[j] - g[j];
            }
            double[] products = objective.sum(PanamaxLogisticRegression.dot(sSpare, ySpare, k),
                    PanamaxLogisticRegression.dot(sSpare, sSpare, k), PanamaxLogisticRegression.dot(ySpare, ySpare, k));
            double sy = products[0];
            if (sy > 1e-12 * Math.sqrt(products[1] * products[2])) {
                // keep the pair only where the curvature is positive, so H stays positive definite; it takes
                // the oldest pair's place, whose arrays are reused for the next one
                int c = (newest + 1) % m;
                double[] oldS = s[c];
                double[] oldY = y[c];
                s[c] = sSpare;
                y[c] = ySpare;
                sSpare = oldS == null ? new double[k] : oldS;
                ySpare = oldY == null ? new double[k] : oldY;
                rho[c] = 1 / sy;
                gamma = sy / products[2];
                newest = c;
                stored = Math.min(stored + 1, m);
            }
            double[] t = w;
            w = wNext;
            wNext = t;
            t = g;
            g = gNext;
            gNext = t;
            f = fNext;
        }
        return new Model(w[d], Arrays.copyOf(w, d), iterations);
    }

    private static double sigmoid(double z) {
        return 1 / (1 + Math.exp(-z));
    }

    /** The inner product of the first {@code length} elements of two vectors. */
    private static double dot(double[] a, double[] b, int length) {
        double sum = 0;
        for (int j = 0; j < length; j++) {
            sum += a[j] * b[j];
        }
        return sum;
    }

    /** {@code b += a * x}. */
    private static void axpy(double a, double[] x, double[] b) {
        for (int j = 0; j < b.length; j++) {
            b[j] += a * x[j];
        }
    }

    /** The feature count, the same on every task (a partition may be empty). */
    private static int dimension(Communicator comm, List<Row> rows) {
        int mine = rows.isEmpty() ? -1 : rows.getFirst().dimension();
        for (Row r : rows) {
            if (r.dimension() != mine) {
                throw new IllegalArgumentException("rows with " + mine + " and " + r.dimension()
                        + " features in one partition");
            }
        }
        try (Arena arena = Arena.ofConfined()) {
            // One MAX over {count, -count} gives the largest and the smallest count at once.
            MemorySegment s = arena.allocate(ValueLayout.JAVA_LONG, 2);
            s.set(ValueLayout.JAVA_LONG, 0, mine);
            s.set(ValueLayout.JAVA_LONG, 8, mine < 0 ? Long.MIN_VALUE : -mine);
            comm.allReduce(s, 2, DataType.INT64, ReduceOp.MAX);
            long max = s.get(ValueLayout.JAVA_LONG, 0);
            long min = -s.get(ValueLayout.JAVA_LONG, 8);
            if (max < 0) {
                throw new IllegalArgumentException("no rows to train on");
            }
            if (min != max) {
                throw new IllegalArgumentException("the partitions' rows have " + min + " and " + max
                        + " features; every row needs the same");
            }
            return (int) max;
        }
    }

    /** {@code a x = b} for a symmetric positive definite {@code a} (Cholesky). */
    static double[] solve(double[][] a, double[] b) {
        int n = b.length;
        double[][] l = new double[n][n];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j <= i; j++) {
                double s = a[i][j];
                for (int k = 0; k < j; k++) {
                    s -= l[i][k] * l[j][k];
                }
                if (i == j) {
                    if (s <= 0) {
                        throw new IllegalStateException("the Hessian is not positive definite (separable data "
                                + "without regularization?); set regParam > 0");
                    }
                    l[i][i] = Math.sqrt(s);
                } else {
                    l[i][j] = s / l[j][j];
                }
            }
        }
        double[] y = new double[n];
        for (int i = 0; i < n; i++) {
            double s = b[i];
            for (int k = 0; k < i; k++) {
                s -= l[i][k] * y[k];
            }
            y[i] = s / l[i][i];
        }
        double[] x = new double[n];
        for (int i = n - 1; i >= 0; i--) {
            double s = y[i];
            for (int k = i + 1; k < n; k++) {
                s -= l[k][i] * x[k];
            }
            x[i] = s / l[i][i];
        }
        return x;
    }
}
