package dev.panamax.spark;

import dev.panamax.spark.PanamaxLogisticRegression.Solver;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.ml.classification.LogisticRegression;
import org.apache.spark.ml.classification.LogisticRegressionModel;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link PanamaxLogisticRegression} in a barrier stage of a {@code local[4]} context gives the model MLlib's
 * {@code LogisticRegression} fits on the same rows (same objective: {@code standardization=false}, L2 only),
 * both converged tightly.
 */
class PanamaxLogisticRegressionTest {
    static final int PARTITIONS = 4;
    static final int FEATURES = 6;
    static final int ROWS = 3001;
    static final double TOLERANCE = 1e-6;

    static SparkSession spark;
    static JavaSparkContext jsc;

    @BeforeAll
    static void startSpark() {
        spark = SparkSession.builder()
                .master("local[" + PARTITIONS + "]")
                .appName("panamax-logistic-regression-test")
                .config("spark.ui.enabled", "false")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .getOrCreate();
        spark.sparkContext().setLogLevel("WARN");
        jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    }

    @AfterAll
    static void stopSpark() {
        if (spark != null) {
            spark.stop();
        }
    }

    /** Rows of a noisy logistic model (not separable), seeded. */
    static List<PanamaxLogisticRegression.Row> rows() {
        SplittableRandom r = new SplittableRandom(5);
        double[] truth = {1.5, -2.0, 0.7, 0.0, 3.0, -0.4};
        List<PanamaxLogisticRegression.Row> out = new ArrayList<>();
        for (int i = 0; i < ROWS; i++) {
            double[] x = new double[FEATURES];
            double z = -0.3;
            for (int j = 0; j < FEATURES; j++) {
                x[j] = r.nextGaussian() * (j + 1) / 3;
                z += truth[j] * x[j];
            }
            out.add(PanamaxLogisticRegression.Row.dense(r.nextDouble() < 1 / (1 + Math.exp(-z)) ? 1 : 0, x));
        }
        return out;
    }

    /**
     * Sparse rows of a wide model: {@code nonZeros} features a row out of {@code dimension}, chosen at random,
     * the label drawn from a logistic model on them (seeded).
     */
    static List<PanamaxLogisticRegression.Row> sparseRows(int count, int dimension, int nonZeros, long seed) {
        SplittableRandom truthRandom = new SplittableRandom(7);
        double[] truth = new double[dimension];
        for (int j = 0; j < dimension; j++) {
            truth[j] = truthRandom.nextDouble(-1, 1);
        }
        SplittableRandom r = new SplittableRandom(seed);
        List<PanamaxLogisticRegression.Row> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int[] indices = r.ints(nonZeros * 2L, 0, dimension).distinct().limit(nonZeros).sorted().toArray();
            double[] values = new double[indices.length];
            double z = 0.1;
            for (int k = 0; k < indices.length; k++) {
                values[k] = r.nextGaussian();
                z += truth[indices[k]] * values[k];
            }
            out.add(PanamaxLogisticRegression.Row.sparse(r.nextDouble() < 1 / (1 + Math.exp(-z)) ? 1 : 0, dimension,
                    indices, values));
        }
        return out;
    }

    /** The row as an MLlib vector, dense or sparse as it is. */
    static Vector vector(PanamaxLogisticRegression.Row r, boolean sparse) {
        int[] indices = new int[r.nonZeroCount()];
        double[] values = new double[r.nonZeroCount()];
        for (int i = 0; i < indices.length; i++) {
            indices[i] = r.index(i);
            values[i] = r.value(i);
        }
        return sparse ? Vectors.sparse(r.dimension(), indices, values) : Vectors.dense(values);
    }

    /** MLlib's model of the same objective (standardization off, L2 only), run to a tight tolerance. */
    static LogisticRegressionModel mllib(List<PanamaxLogisticRegression.Row> rows, boolean sparse, double regParam) {
        StructType schema = new StructType(new StructField[] {
            new StructField("label", DataTypes.DoubleType, false, Metadata.empty()),
            new StructField("features", new VectorUDT(), false, Metadata.empty())});
        List<Row> sqlRows = new ArrayList<>();
        for (PanamaxLogisticRegression.Row r : rows) {
            sqlRows.add(RowFactory.create(r.label(), vector(r, sparse)));
        }
        Dataset<Row> df = spark.createDataFrame(sqlRows, schema);
        return new LogisticRegression().setRegParam(regParam).setElasticNetParam(0).setStandardization(false)
                .setFitIntercept(true).setTol(1e-12).setMaxIter(1000).fit(df);
    }

    static void assertSameModel(LogisticRegressionModel mllib, PanamaxLogisticRegression.Model ours,
            double tolerance) {
        assertEquals(mllib.intercept(), ours.intercept(), tolerance, "the intercept");
        double[] theirs = mllib.coefficients().toArray();
        assertEquals(theirs.length, ours.coefficients().length, "the coefficient count");
        for (int j = 0; j < theirs.length; j++) {
            assertEquals(theirs[j], ours.coefficients()[j], tolerance, "coefficient " + j);
        }
    }

    @ParameterizedTest(name = "regParam {0}, {1}")
    @CsvSource({"0.0, NEWTON", "0.05, NEWTON", "0.0, LBFGS", "0.05, LBFGS"})
    void theModelIsMllibs(double regParam, Solver solver) {
        List<PanamaxLogisticRegression.Row> rows = rows();
        PanamaxLogisticRegression.Model ours = new PanamaxLogisticRegression().regParam(regParam).solver(solver)
                .maxIterations(1000).fit(jsc.parallelize(rows, PARTITIONS));
        if (solver == Solver.NEWTON) {
            assertTrue(ours.iterations() < 30, "Newton converges in a few iterations: " + ours.iterations());
        }
        assertSameModel(mllib(rows, false, regParam), ours, TOLERANCE);
    }

    /**
     * Sparse rows, more features than {@link PanamaxLogisticRegression#NEWTON_MAX_FEATURES} (so the default solver
     * is L-BFGS); each feature in about 75 rows, which keeps MLlib's L-BFGS, run on standardized features, well
     * enough conditioned to converge to the tolerance.
     */
    @Test
    void aSparseModelByLbfgsIsMllibs() {
        List<PanamaxLogisticRegression.Row> rows = sparseRows(3000, 401, 10, 3);
        PanamaxLogisticRegression.Model ours = new PanamaxLogisticRegression().regParam(0.01).maxIterations(1000)
                .fit(jsc.parallelize(rows, PARTITIONS));
        assertSameModel(mllib(rows, true, 0.01), ours, TOLERANCE);
    }

    /** Sparse rows through Newton give the model dense copies of them give. */
    @Test
    void newtonOnSparseRowsIsNewtonOnDenseRows() {
        List<PanamaxLogisticRegression.Row> sparse = sparseRows(700, 9, 4, 11);
        List<PanamaxLogisticRegression.Row> dense = new ArrayList<>();
        for (PanamaxLogisticRegression.Row r : sparse) {
            dense.add(PanamaxLogisticRegression.Row.dense(r.label(), vector(r, true).toArray()));
        }
        PanamaxLogisticRegression estimator = new PanamaxLogisticRegression().regParam(0.02).solver(Solver.NEWTON);
        PanamaxLogisticRegression.Model a = estimator.fit(jsc.parallelize(sparse, PARTITIONS));
        PanamaxLogisticRegression.Model b = estimator.fit(jsc.parallelize(dense, PARTITIONS));
        assertEquals(b.intercept(), a.intercept(), 1e-12);
        assertArrayEquals(b.coefficients(), a.coefficients(), 1e-12);
    }

    @Test
    void badRowsAreRefusedNamingWhatIsWrong() {
        IllegalArgumentException label = assertThrows(IllegalArgumentException.class,
                () -> PanamaxLogisticRegression.Row.dense(2, new double[] {1}));
        assertTrue(label.getMessage().contains("a label is 0 or 1: 2.0"), label.getMessage());
        IllegalArgumentException order = assertThrows(IllegalArgumentException.class,
                () -> PanamaxLogisticRegression.Row.sparse(1, 10, new int[] {3, 3}, new double[] {1, 2}));
        assertTrue(order.getMessage().contains("index 3 at position 1"), order.getMessage());
        IllegalArgumentException range = assertThrows(IllegalArgumentException.class,
                () -> PanamaxLogisticRegression.Row.sparse(1, 10, new int[] {10}, new double[] {1}));
        assertTrue(range.getMessage().contains("[0, 10)"), range.getMessage());
        IllegalArgumentException lengths = assertThrows(IllegalArgumentException.class,
                () -> PanamaxLogisticRegression.Row.sparse(0, 10, new int[] {1}, new double[] {1, 2}));
        assertTrue(lengths.getMessage().contains("1 indices and 2 values"), lengths.getMessage());
    }

    /** Partitions whose rows disagree on the feature count fail on every task before any training. */
    @Test
    void rowsOfDifferentWidthsFailTheStage() {
        List<PanamaxLogisticRegression.Row> rows = new ArrayList<>(sparseRows(8, 5, 2, 1));
        rows.addAll(sparseRows(8, 6, 2, 2));
        Exception e = assertThrows(Exception.class, () -> new PanamaxLogisticRegression().fit(
                jsc.parallelize(rows, 2)));
        assertTrue(String.valueOf(e.getMessage()).contains("the partitions' rows have 5 and 6 features"),
                String.valueOf(e.getMessage()));
    }
}
