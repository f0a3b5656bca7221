package dev.panamax.spark;

import dev.panamax.spark.PanamaxLogisticRegression.Solver;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.ml.classification.LogisticRegression;
import org.apache.spark.ml.classification.LogisticRegressionModel;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The Spark example ({@code scripts/spark-example}): starts a standalone cluster on this machine (a master, two
 * workers, an executor JVM each; {@link LocalStandaloneCluster}), fits a logistic regression on it with
 * {@link PanamaxLogisticRegression} (sums all-reduced between the executors inside one barrier stage) and with
 * MLlib's {@code LogisticRegression} (aggregated through the driver), and prints both models, their largest
 * difference and the time of each fit. With {@code --per-iteration A,B} it instead measures the time of one
 * iteration of each: fits of A and of B iterations, alternating between the two libraries, each library's time
 * per iteration the difference of the two fits' times over the difference of their iteration counts (so the
 * costs paid once per fit cancel), the median of {@code --repeats} rounds. It lives with the tests because it
 * uses their cluster launcher and MLlib, a test dependency of the module.
 *
 * <p>Options: {@code --rows N} (default 200000), {@code --features F} (20), {@code --nonzeros K} (0: dense rows;
 * otherwise K random features of each row are non-zero), {@code --reg R} (0.01), {@code --solver S} (auto,
 * newton or lbfgs), {@code --per-iteration A,B}, {@code --repeats R} (3), {@code --executor-memory M} (1g).
 */
public final class SparkClusterExample {
    private SparkClusterExample() {
    }

    /** What the command line asks for. */
    private record Options(int rows, int features, int nonZeros, double reg, Solver solver, int[] perIteration,
            int repeats, String executorMemory) {
        static Options parse(String[] args) {
            int rows = 200_000;
            int features = 20;
            int nonZeros = 0;
            double reg = 0.01;
            Solver solver = Solver.AUTO;
            int[] perIteration = null;
            int repeats = 3;
            String executorMemory = "1g";
            if (args.length % 2 != 0) {
                throw new IllegalArgumentException("an option without a value: " + args[args.length - 1]);
            }
            for (int i = 0; i < args.length; i += 2) {
                String v = args[i + 1];
                switch (args[i]) {
                    case "--rows" -> rows = Integer.parseInt(v);
                    case "--features" -> features = Integer.parseInt(v);
                    case "--nonzeros" -> nonZeros = Integer.parseInt(v);
                    case "--reg" -> reg = Double.parseDouble(v);
                    case "--solver" -> solver = Solver.valueOf(v.toUpperCase(Locale.ROOT));
                    case "--per-iteration" -> perIteration = Arrays.stream(v.split(",")).mapToInt(Integer::parseInt)
                            .toArray();
                    case "--repeats" -> repeats = Integer.parseInt(v);
                    case "--executor-memory" -> executorMemory = v;
                    default -> throw new IllegalArgumentException("unknown option " + args[i] + " (--rows, "
                            + "--features, --nonzeros, --reg, --solver, --per-iteration, --repeats, "
                            + "--executor-memory)");
                }
            }
            if (perIteration != null && (perIteration.length != 2 || perIteration[0] >= perIteration[1]
                    || perIteration[0] < 1)) {
                throw new IllegalArgumentException("--per-iteration takes two iteration counts A,B with 1 <= A < B");
            }
            if (nonZeros > features) {
                throw new IllegalArgumentException("--nonzeros " + nonZeros + " exceeds --features " + features);
            }
            return new Options(rows, features, nonZeros, reg, solver, perIteration, repeats, executorMemory);
        }
    }

    public static void main(String[] args) throws Exception {
        Options o = Options.parse(args);
        int executors = 2;
        int cores = 2;
        try (LocalStandaloneCluster cluster = new LocalStandaloneCluster(executors, cores)) {
            SparkSession spark = SparkSession.builder().config(cluster.sparkConf("panamax-spark-example")
                    .set("spark.executor.memory", o.executorMemory())).getOrCreate();
            try {
                spark.sparkContext().setLogLevel("WARN");
                run(spark, executors * cores, o);
            } finally {
                spark.stop();
            }
        }
    }

    private static void run(SparkSession spark, int partitions, Options o) {
        JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        List<Integer> ids = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            ids.add(p);
        }
        int rowsPerPartition = o.rows() / partitions;
        boolean sparse = o.nonZeros() > 0;
        int features = o.features();
        int nonZeros = o.nonZeros();
        // Each executor generates its partitions' rows: the driver ships no data.
        JavaRDD<PanamaxLogisticRegression.Row> rdd = jsc.parallelize(ids, partitions)
                .flatMap(p -> (sparse
                        ? PanamaxLogisticRegressionTest.sparseRows(rowsPerPartition, features, nonZeros, 1_000 + p)
                        : generate(p, rowsPerPartition, features)).iterator())
                .cache();
        rdd.count();
        StructType schema = new StructType(new StructField[] {
            new StructField("label", DataTypes.DoubleType, false, Metadata.empty()),
            new StructField("features", new VectorUDT(), false, Metadata.empty())});
        Dataset<Row> df = spark.createDataFrame(rdd.map(r -> RowFactory.create(r.label(),
                PanamaxLogisticRegressionTest.vector(r, sparse))), schema).cache();
        df.count();
        System.out.printf(Locale.ROOT, "# logistic regression, %d rows x %d features (%s), regParam %s, "
                + "%d partitions on 2 executor processes%n", rowsPerPartition * partitions, o.features(),
                sparse ? o.nonZeros() + " non-zero a row" : "dense", o.reg(), partitions);
        if (o.perIteration() != null) {
            perIteration(rdd, df, o);
        } else {
            compare(rdd, df, o);
        }
    }

    /** Fits both to convergence; prints the models, their largest difference and the times. */
    private static void compare(JavaRDD<PanamaxLogisticRegression.Row> rdd, Dataset<Row> df, Options o) {
        long t0 = System.nanoTime();
        PanamaxLogisticRegression.Model ours = new PanamaxLogisticRegression().regParam(o.reg()).solver(o.solver())
                .maxIterations(500).fit(rdd);
        double oursSeconds = (System.nanoTime() - t0) / 1e9;
        t0 = System.nanoTime();
        LogisticRegressionModel mllib = new LogisticRegression().setRegParam(o.reg()).setElasticNetParam(0)
                .setStandardization(false).setTol(1e-10).setMaxIter(500).fit(df);
        double mllibSeconds = (System.nanoTime() - t0) / 1e9;

        double[] theirs = mllib.coefficients().toArray();
        double largest = Math.abs(mllib.intercept() - ours.intercept());
        for (int j = 0; j < o.features(); j++) {
            largest = Math.max(largest, Math.abs(theirs[j] - ours.coefficients()[j]));
        }
        String solver = o.features() <= PanamaxLogisticRegression.NEWTON_MAX_FEATURES && o.solver() == Solver.AUTO
                ? "NEWTON" : o.solver() == Solver.AUTO ? "LBFGS" : o.solver().name();
        System.out.printf(Locale.ROOT, "Panamax (%s, all-reduce in one barrier stage): %d iterations, %.2f s; "
                + "intercept %.6f, w[0..2] %s%n", solver, ours.iterations(), oursSeconds, ours.intercept(),
                firstThree(ours.coefficients()));
        System.out.printf(Locale.ROOT, "MLlib (L-BFGS, aggregated through the driver): %d iterations, %.2f s; "
                + "intercept %.6f, w[0..2] %s%n", mllib.summary().totalIterations(), mllibSeconds,
                mllib.intercept(), firstThree(theirs));
        System.out.printf(Locale.ROOT, "largest difference between the two models: %.2e%n", largest);
    }

    /**
     * The time of one iteration of each library: fits of A and B iterations, alternating between the libraries,
     * no convergence test stopping them early; per round, (time of B - time of A) / (iterations of B - of A).
     */
    private static void perIteration(JavaRDD<PanamaxLogisticRegression.Row> rdd, Dataset<Row> df, Options o) {
        int a = o.perIteration()[0];
        int b = o.perIteration()[1];
        List<Double> oursTimes = new ArrayList<>();
        List<Double> mllibTimes = new ArrayList<>();
        System.out.printf(Locale.ROOT, "# round  panamax_ms_per_iteration  mllib_ms_per_iteration  ratio "
                + "(fits of %d and %d iterations)%n", a, b);
        for (int round = 0; round <= o.repeats(); round++) {
            double[] ours = new double[2];
            double[] theirs = new double[2];
            int[] oursIterations = new int[2];
            int[] theirIterations = new int[2];
            for (int k = 0; k < 2; k++) {
                int iterations = k == 0 ? a : b;
                long t0 = System.nanoTime();
                PanamaxLogisticRegression.Model m = new PanamaxLogisticRegression().regParam(o.reg())
                        .solver(o.solver()).tolerance(0).maxIterations(iterations).fit(rdd);
                ours[k] = (System.nanoTime() - t0) / 1e6;
                oursIterations[k] = m.iterations();
                t0 = System.nanoTime();
                LogisticRegressionModel mllib = new LogisticRegression().setRegParam(o.reg())
                        .setElasticNetParam(0).setStandardization(false).setTol(0).setMaxIter(iterations).fit(df);
                theirs[k] = (System.nanoTime() - t0) / 1e6;
                theirIterations[k] = mllib.summary().totalIterations();
            }
            double oursPer = (ours[1] - ours[0]) / (oursIterations[1] - oursIterations[0]);
            double theirsPer = (theirs[1] - theirs[0]) / (theirIterations[1] - theirIterations[0]);
            // round 0 warms both up (class loading, JIT, the cached data's first use) and is not counted
            System.out.printf(Locale.ROOT, "%s%6d  %24.1f  %22.1f  %5.2f   (fits: Panamax %d it %.0f ms, %d it %.0f ms;"
                    + " MLlib %d it %.0f ms, %d it %.0f ms)%n", round == 0 ? "# warm-up " : "", round, oursPer,
                    theirsPer, theirsPer / oursPer, oursIterations[0], ours[0], oursIterations[1], ours[1],
                    theirIterations[0], theirs[0], theirIterations[1], theirs[1]);
            if (round > 0) {
                oursTimes.add(oursPer);
                mllibTimes.add(theirsPer);
            }
        }
        double oursMedian = median(oursTimes);
        double mllibMedian = median(mllibTimes);
        System.out.printf(Locale.ROOT, "median ms per iteration: Panamax %.1f, MLlib %.1f; MLlib / Panamax %.2f%n",
                oursMedian, mllibMedian, mllibMedian / oursMedian);
    }

    private static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    private static String firstThree(double[] w) {
        StringBuilder b = new StringBuilder();
        for (int j = 0; j < Math.min(3, w.length); j++) {
            b.append(String.format(Locale.ROOT, "%s%.6f", j == 0 ? "" : " ", w[j]));
        }
        return b.toString();
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
            out.add(PanamaxLogisticRegression.Row.dense(r.nextDouble() < 1 / (1 + Math.exp(-z)) ? 1 : 0, x));
        }
        return out;
    }
}
