package dev.panamax.spark;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.ml.classification.LogisticRegression;
import org.apache.spark.ml.classification.LogisticRegressionModel;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
            out.add(new PanamaxLogisticRegression.Row(r.nextDouble() < 1 / (1 + Math.exp(-z)) ? 1 : 0, x));
        }
        return out;
    }

    @ParameterizedTest(name = "regParam {0}")
    @ValueSource(doubles = {0.0, 0.05})
    void theModelIsMllibs(double regParam) {
        List<PanamaxLogisticRegression.Row> rows = rows();
        JavaRDD<PanamaxLogisticRegression.Row> rdd = jsc.parallelize(rows, PARTITIONS);
        PanamaxLogisticRegression.Model ours = new PanamaxLogisticRegression().regParam(regParam).fit(rdd);

        StructType schema = new StructType(new StructField[] {
            new StructField("label", DataTypes.DoubleType, false, Metadata.empty()),
            new StructField("features", new VectorUDT(), false, Metadata.empty())});
        List<Row> sqlRows = new ArrayList<>();
        for (PanamaxLogisticRegression.Row r : rows) {
            sqlRows.add(RowFactory.create(r.label(), Vectors.dense(r.features())));
        }
        Dataset<Row> df = spark.createDataFrame(sqlRows, schema);
        LogisticRegressionModel mllib = new LogisticRegression().setRegParam(regParam).setElasticNetParam(0)
                .setStandardization(false).setFitIntercept(true).setTol(1e-12).setMaxIter(1000).fit(df);

        assertTrue(ours.iterations() < 30, "Newton converges in a few iterations: " + ours.iterations());
        assertEquals(mllib.intercept(), ours.intercept(), TOLERANCE, "the intercept");
        double[] theirs = mllib.coefficients().toArray();
        for (int j = 0; j < FEATURES; j++) {
            assertEquals(theirs[j], ours.coefficients()[j], TOLERANCE, "coefficient " + j);
        }
    }
}
