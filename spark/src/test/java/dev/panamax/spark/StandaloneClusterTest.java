package dev.panamax.spark;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.lightgbm.PanamaxLightGbm;
import dev.panamax.memory.ReduceOp;
import dev.panamax.spark.PanamaxLogisticRegression.Solver;
import dev.panamax.testing.RankThreads;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link PanamaxBarrier} on a real Spark standalone cluster ({@link LocalStandaloneCluster}: a master and two
 * workers, each executor its own JVM): a barrier stage of 4 tasks in 2 executor processes all-reduces arrays,
 * checked element by element; tasks of one executor reach each other over shared memory, tasks of different
 * executors over TCP. An executor killed with SIGKILL mid-stage makes a surviving task fail naming the lost rank,
 * and Spark's retry of the barrier stage then succeeds.
 */
class StandaloneClusterTest {
    static final int EXECUTORS = 2;
    static final int CORES = 2;
    static final int TASKS = EXECUTORS * CORES;
    static final int LENGTH = 1009;

    static LocalStandaloneCluster cluster;
    static JavaSparkContext spark;

    @BeforeAll
    static void startCluster() throws Exception {
        cluster = new LocalStandaloneCluster(EXECUTORS, CORES);
        spark = new JavaSparkContext(cluster.sparkConf("panamax-standalone-test"));
        spark.setLogLevel("WARN");
        long deadline = System.nanoTime() + LocalStandaloneCluster.START_TIMEOUT.toNanos();
        while (!spark.sc().isStopped() && spark.sc().getExecutorMemoryStatus().size() < EXECUTORS + 1
                && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        assertTrue(!spark.sc().isStopped() && spark.sc().getExecutorMemoryStatus().size() == EXECUTORS + 1,
                () -> "the executors did not register:\n" + cluster.logs());
    }

    /** An RDD of the partition ids 0 .. TASKS-1, one per partition. */
    static JavaRDD<Integer> partitions() {
        List<Integer> ids = new ArrayList<>();
        for (int p = 0; p < TASKS; p++) {
            ids.add(p);
        }
        return spark.parallelize(ids, TASKS);
    }

    @AfterAll
    static void stopCluster() {
        try {
            if (spark != null) {
                spark.close();
            }
        } finally {
            if (cluster != null) {
                cluster.close();
            }
        }
    }

    /** The task failures Spark reports, as their messages. */
    static final List<String> FAILURES = new CopyOnWriteArrayList<>();

    @Test
    void aKilledExecutorFailsTheStageNamingTheLostRankAndTheRetrySucceeds() throws Exception {
        Path dir = Files.createTempDirectory("panamax-killed-executor");
        String marker = dir.resolve("killed").toString();
        SparkListener listener = new SparkListener() {
            @Override
            public void onTaskEnd(SparkListenerTaskEnd end) {
                if (end.reason() instanceof TaskFailedReason failed) {
                    FAILURES.add(failed.toErrorString());
                }
            }
        };
        spark.sc().addSparkListener(listener);
        try {
            List<double[]> out = PanamaxBarrier.mapPartitions(partitions(), (ctx, it) -> {
                Communicator c = PanamaxBarrier.communicator(ctx);
                double[] sum = new double[LENGTH];
                for (int i = 0; i < LENGTH; i++) {
                    sum[i] = PanamaxBarrierSparkTest.value(c.rank(), 0, i);
                }
                PanamaxBarrier.allReduce(ctx, sum, ReduceOp.SUM); // every rank is connected and running
                if (ctx.stageAttemptNumber() == 0 && c.rank() == TASKS - 1) {
                    // The first attempt loses the last rank's executor: its pid, then SIGKILL from outside.
                    Files.writeString(Path.of(marker), Long.toString(ProcessHandle.current().pid()));
                    new ProcessBuilder("kill", "-9", Long.toString(ProcessHandle.current().pid())).start().waitFor();
                }
                PanamaxBarrier.allReduce(ctx, sum, ReduceOp.SUM);
                return List.of(sum).iterator();
            }).repartition(1).collect(); // a shuffle after it: Spark retries a failed barrier stage only then
            double[] want = new double[LENGTH];
            for (int p = 0; p < TASKS; p++) {
                for (int i = 0; i < LENGTH; i++) {
                    want[i] += PanamaxBarrierSparkTest.value(p, 0, i) * TASKS;
                }
            }
            assertEquals(TASKS, out.size());
            for (double[] sum : out) {
                assertArrayEquals(want, sum, "the retried stage all-reduces");
            }
            assertTrue(Files.exists(Path.of(marker)), "an executor was killed in the first attempt");
            assertTrue(FAILURES.stream().anyMatch(f -> f.contains("PeerFailedException")
                    && f.contains("rank " + (TASKS - 1))), "a surviving task named the lost rank " + (TASKS - 1)
                    + ": " + FAILURES);
        } finally {
            spark.sc().removeSparkListener(listener);
            Files.deleteIfExists(Path.of(marker));
            Files.deleteIfExists(dir);
        }
    }

    /**
     * Newton on dense rows and L-BFGS on sparse rows (its vectors split over the tasks: reduce-scatter and
     * all-gather between the executors) fit across the executors the model one rank fits alone.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = Solver.class, names = {"NEWTON", "LBFGS"})
    void logisticRegressionTrainsAcrossExecutorsAsOnOneRank(Solver solver) {
        List<PanamaxLogisticRegression.Row> rows = solver == Solver.NEWTON ? PanamaxLogisticRegressionTest.rows()
                : PanamaxLogisticRegressionTest.sparseRows(2000, 5003, 15, 9);
        PanamaxLogisticRegression estimator = new PanamaxLogisticRegression().regParam(0.05).solver(solver)
                .maxIterations(500);
        PanamaxLogisticRegression.Model onCluster = estimator.fit(spark.parallelize(rows, TASKS));
        PanamaxLogisticRegression.Model alone;
        List<Communicator> one = Panamax.local(1);
        try {
            alone = estimator.train(one.getFirst(), rows.iterator());
        } finally {
            one.getFirst().close();
        }
        if (solver == Solver.NEWTON) {
            assertEquals(alone.iterations(), onCluster.iterations());
        }
        assertEquals(alone.intercept(), onCluster.intercept(), 1e-9);
        assertArrayEquals(alone.coefficients(), onCluster.coefficients(), 1e-9);
    }

    static final String LIGHTGBM_PARAMS = "objective=binary num_leaves=7 min_data_in_leaf=10 num_threads=1"
            + " verbose=-1 deterministic=true force_row_wise=true seed=3";

    /** Partition p's rows for LightGBM: 400 rows of 5 features, the label a noisy threshold of a linear score. */
    static PanamaxLightGbm.LocalData lightGbmPartition(int p) {
        int rows = 400;
        int cols = 5;
        SplittableRandom r = new SplittableRandom(1_000 + p);
        double[] x = new double[rows * cols];
        float[] y = new float[rows];
        for (int i = 0; i < rows; i++) {
            double score = 0;
            for (int j = 0; j < cols; j++) {
                x[i * cols + j] = r.nextGaussian();
                score += (j - 2) * x[i * cols + j];
            }
            y[i] = score + r.nextGaussian() > 0 ? 1f : 0f;
        }
        return new PanamaxLightGbm.LocalData(x, rows, cols, y);
    }

    @Test
    void lightGbmTrainsInABarrierStageAcrossExecutors() {
        // LightGBM's network per task thread, Panamax's collectives between the executors: no driver socket,
        // no fixed ports (SynapseML's setup needs both).
        List<String> models = PanamaxBarrier.mapPartitions(partitions(), (ctx, it) -> List.of(
                PanamaxLightGbm.train(PanamaxBarrier.communicator(ctx), LIGHTGBM_PARAMS,
                        lightGbmPartition(ctx.partitionId()), 6)).iterator()).collect();
        List<Communicator> comms = Panamax.local(TASKS);
        List<String> threads;
        try {
            threads = RankThreads.onEach(comms, c -> PanamaxLightGbm.train(c, LIGHTGBM_PARAMS,
                    lightGbmPartition(c.rank()), 6));
        } finally {
            RankThreads.closeAll(comms);
        }
        assertEquals(TASKS, models.size());
        for (String m : models) {
            assertEquals(threads.getFirst(), m, "the model of 4 in-JVM ranks, on every task");
        }
        assertTrue(models.getFirst().contains("Tree=5\n"), "6 trees");
    }

    @Test
    void aBarrierStageAcrossExecutorProcessesAllReduces() {
        List<Object[]> out = PanamaxBarrier.mapPartitions(partitions(), (ctx, it) -> {
            int p = ctx.partitionId();
            Communicator c = PanamaxBarrier.communicator(ctx);
            double[] sum = new double[LENGTH];
            for (int i = 0; i < LENGTH; i++) {
                sum[i] = PanamaxBarrierSparkTest.value(p, 0, i);
            }
            PanamaxBarrier.allReduce(ctx, sum, ReduceOp.SUM);
            String[] transports = new String[c.size()];
            for (int q = 0; q < c.size(); q++) {
                transports[q] = q == c.rank() ? "self" : c.transportTo(q);
            }
            return List.<Object[]>of(new Object[] {c.rank(), ProcessHandle.current().pid(), transports, sum})
                    .iterator();
        }).collect();

        double[] want = new double[LENGTH];
        for (int p = 0; p < TASKS; p++) {
            for (int i = 0; i < LENGTH; i++) {
                want[i] += PanamaxBarrierSparkTest.value(p, 0, i);
            }
        }
        assertEquals(TASKS, out.size());
        Map<Integer, Long> pidOfRank = new HashMap<>();
        for (Object[] row : out) {
            pidOfRank.put((Integer) row[0], (Long) row[1]);
            assertArrayEquals(want, (double[]) row[3], "rank " + row[0]);
        }
        Set<Long> pids = new HashSet<>(pidOfRank.values());
        assertEquals(EXECUTORS, pids.size(), "the tasks ran in " + EXECUTORS + " executor processes: " + pidOfRank);
        assertTrue(!pids.contains(ProcessHandle.current().pid()), "not in the driver");
        for (Object[] row : out) {
            int rank = (Integer) row[0];
            String[] transports = (String[]) row[2];
            for (int q = 0; q < TASKS; q++) {
                if (q != rank) {
                    String expected = pidOfRank.get(q).equals(pidOfRank.get(rank)) ? "shm" : "tcp";
                    assertTrue(transports[q].startsWith(expected), "rank " + rank + " to rank " + q + ": "
                            + transports[q] + " (expected " + expected + ")");
                }
            }
        }
    }
}
