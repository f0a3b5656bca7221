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

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The Spark example ({@code scripts/spark-example}): starts a standalone cluster on this machine (a master, two
 * workers, an executor JVM each; {@link LocalStandaloneCluster}), fits a logistic regression on it with
 * {@link PanamaxLogisticRegression} (gradients and Hessians all-reduced between the executors inside one barrier
 * stage) and with MLlib's {@code LogisticRegression} (aggregated through the driver), and prints both models,
 * their largest difference and the time of each fit. It lives with the tests because it uses their cluster
 * launcher and MLlib, a test dependency of the module.
 *
 * <p>Options: {@code --rows N} (default 200000), {@code --features F} (20), {@code --reg R} (0.01).
 */
public final class SparkClusterExample {
    private SparkClusterExample() {
    }

    public static void main(String[] args) throws Exception {
        int rows = 200_000;
        int features = 20;
        double reg = 0.01;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--rows" -> rows = Integer.parseInt(args[i + 1]);
                case "--features" -> features = Integer.parseInt(args[i + 1]);
                case "--reg" -> reg = Double.parseDouble(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + " (--rows, --features, --reg)");
            }
        }
        int executors = 2;
        int cores = 2;
        try (LocalStandaloneCluster cluster = new LocalStandaloneCluster(executors, cores)) {
            SparkSession spark = SparkSession.builder().config(cluster.sparkConf("panamax-spark-example"))
                    .getOrCreate();
            try {
                spark.sparkContext().setLogLevel("WARN");
                run(spark, executors * cores, rows, features, reg);
            } finally {
                spark.stop();
            }
        }
    }

    private static void run(SparkSession spark, int partitions, int rows, int features, double reg) {
        JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        List<Integer> ids = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            ids.add(p);
        }
        // Each executor generates its partitions' rows: the driver ships no data.
        JavaRDD<PanamaxLogisticRegression.Row> rdd = jsc.parallelize(ids, partitions)
                .flatMap(p -> generate(p, rows / partitions, features).iterator()).cache();
        rdd.count();
        StructType schema = new StructType(new StructField[] {
            new StructField("label", DataTypes.DoubleType, false, Metadata.empty()),
            new StructField("features", new VectorUDT(), false, Metadata.empty())});
        Dataset<Row> df = spark.createDataFrame(rdd.map(r -> RowFactory.create(r.label(),
                Vectors.dense(r.features()))), schema).cache();
        df.count();
        System.out.printf(Locale.ROOT, "# logistic regression, %d rows x %d features, regParam %s, %d partitions "
                + "on 2 executor processes%n", rows, features, reg, partitions);

        long t0 = System.nanoTime();
        PanamaxLogisticRegression.Model ours = new PanamaxLogisticRegression().regParam(reg).fit(rdd);
        double oursSeconds = (System.nanoTime() - t0) / 1e9;
        t0 = System.nanoTime();
        LogisticRegressionModel mllib = new LogisticRegression().setRegParam(reg).setElasticNetParam(0)
                .setStandardization(false).setTol(1e-10).setMaxIter(500).fit(df);
        double mllibSeconds = (System.nanoTime() - t0) / 1e9;

        double[] theirs = mllib.coefficients().toArray();
        double largest = Math.abs(mllib.intercept() - ours.intercept());
        for (int j = 0; j < features; j++) {
            largest = Math.max(largest, Math.abs(theirs[j] - ours.coefficients()[j]));
        }
        System.out.printf(Locale.ROOT, "Panamax (Newton, all-reduce in one barrier stage): %d iterations, %.2f s; "
                + "intercept %.6f, w[0..2] %.6f %.6f %.6f%n", ours.iterations(), oursSeconds, ours.intercept(),
                ours.coefficients()[0], ours.coefficients()[1], ours.coefficients()[2]);
        System.out.printf(Locale.ROOT, "MLlib (L-BFGS, aggregated through the driver): %d iterations, %.2f s; "
                + "intercept %.6f, w[0..2] %.6f %.6f %.6f%n", mllib.summary().totalIterations(), mllibSeconds,
                mllib.intercept(), theirs[0], theirs[1], theirs[2]);
        System.out.printf(Locale.ROOT, "largest difference between the two models: %.2e%n", largest);
    }

    /** Partition {@code p}'s rows of a noisy logistic model (the same weights in every partition). */
    private static List<PanamaxLogisticRegression.Row> generate(int p, int rows, int features) {
        SplittableRandom w = new SplittableRandom(17);
        double[] truth = new double[features];
        for (int j = 0; j < features; j++) {
            truth[j] = w.nextDouble(-2, 2);
        }
        SplittableRandom r = new SplittableRandom(1_000 + p);
        List<PanamaxLogisticRegression.Row> out = new ArrayList<>(rows);
        for (int i = 0; i < rows; i++) {
            double[] x = new double[features];
            double z = 0.2;
            for (int j = 0; j < features; j++) {
                x[j] = r.nextGaussian();
                z += truth[j] * x[j];
            }
            out.add(new PanamaxLogisticRegression.Row(r.nextDouble() < 1 / (1 + Math.exp(-z)) ? 1 : 0, x));
        }
        return out;
    }
}
