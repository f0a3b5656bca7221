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
 * keeps its partition's rows, and each Newton iteration all-reduces the gradient and the Hessian of the loss
 * over the tasks through Panamax; every task then takes the same step, and the driver only collects the final
 * model (MLlib's {@code LogisticRegression} instead aggregates through the driver at every iteration).
 *
 * <p>It minimizes what MLlib minimizes with {@code standardization=false} and {@code elasticNetParam=0}: the
 * mean log-loss plus {@code regParam / 2 * |w|^2}, the intercept not regularized. Newton's method needs the
 * {@code (d+1)^2} Hessian on every task, which suits up to a few thousand features; the all-reduce carries
 * {@code (d+1)^2 + d + 2} doubles per iteration. Labels are 0 or 1.
 */
public final class PanamaxLogisticRegression implements Serializable {
    private static final long serialVersionUID = 1L;

    private double regParam;
    private int maxIterations = 100;
    private double tolerance = 1e-10;

    /** One training row: a label (0 or 1) and its features. */
    public record Row(double label, double[] features) implements Serializable {
        public Row {
            Objects.requireNonNull(features, "features");
            if (label != 0 && label != 1) {
                throw new IllegalArgumentException("a label is 0 or 1: " + label);
            }
        }
    }

    /** The fitted model. */
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

    /** At most this many Newton iterations (default 100). */
    public PanamaxLogisticRegression maxIterations(int maxIterations) {
        if (maxIterations < 1) {
            throw new IllegalArgumentException("maxIterations must be >= 1: " + maxIterations);
        }
        this.maxIterations = maxIterations;
        return this;
    }

    /** Stop when no coefficient moves by more than this in an iteration (default 1e-10). */
    public PanamaxLogisticRegression tolerance(double tolerance) {
        this.tolerance = tolerance;
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

    /** The Newton iterations on one task's rows; the same model on every rank. */
    Model train(Communicator comm, Iterator<Row> partition) {
        List<Row> rows = new ArrayList<>();
        partition.forEachRemaining(rows::add);
        int d = dimension(comm, rows);
        int n = d + 1; // the intercept is coordinate d
        double[] w = new double[n];
        int iterations = 0;
        try (Arena arena = Arena.ofConfined()) {
            // gradient (n), Hessian (n * n), row count: summed over every task's rows
            int length = n + n * n + 1;
            MemorySegment sums = arena.allocate(ValueLayout.JAVA_DOUBLE, length);
            double[] local = new double[length];
            while (iterations < maxIterations) {
                iterations++;
                Arrays.fill(local, 0);
                for (Row r : rows) {
                    double z = w[d];
                    for (int j = 0; j < d; j++) {
                        z += w[j] * r.features()[j];
                    }
                    double p = 1 / (1 + Math.exp(-z));
                    double residual = p - r.label();
                    double weight = p * (1 - p);
                    for (int j = 0; j < n; j++) {
                        double xj = j < d ? r.features()[j] : 1;
                        local[j] += residual * xj;
                        for (int k = 0; k <= j; k++) {
                            local[n + j * n + k] += weight * xj * (k < d ? r.features()[k] : 1);
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
                for (int j = 0; j < n; j++) {
                    gradient[j] = local[j] / count + (j < d ? regParam * w[j] : 0);
                    for (int k = 0; k <= j; k++) {
                        hessian[j][k] = local[n + j * n + k] / count + (j == k && j < d ? regParam : 0);
                        hessian[k][j] = hessian[j][k];
                    }
                }
                double[] step = solve(hessian, gradient);
                double largest = 0;
                for (int j = 0; j < n; j++) {
                    w[j] -= step[j];
                    largest = Math.max(largest, Math.abs(step[j]));
                }
                if (largest <= tolerance) {
                    break;
                }
            }
        }
        return new Model(w[d], Arrays.copyOf(w, d), iterations);
    }

    /** The feature count, the same on every task (a partition may be empty). */
    private static int dimension(Communicator comm, List<Row> rows) {
        int mine = rows.isEmpty() ? -1 : rows.getFirst().features().length;
        for (Row r : rows) {
            if (r.features().length != mine) {
                throw new IllegalArgumentException("rows with " + mine + " and " + r.features().length
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
