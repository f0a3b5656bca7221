package dev.panamax.spark;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.ml.shared.SharedReduction;
import dev.panamax.ml.shared.SharedVariable;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** Barrier stages of a local[4] Spark context all-reduce through Panamax; results checked element-wise. */
class PanamaxBarrierSparkTest {
    static final int TASKS = 4;
    /** A prime, so that no algorithm's blocks divide it evenly. */
    static final int LENGTH = 1009;

    static JavaSparkContext spark;

    @BeforeAll
    static void startSpark() {
        SparkConf conf = new SparkConf()
                .setMaster("local[" + TASKS + "]")
                .setAppName("panamax-barrier-test")
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1");
        spark = new JavaSparkContext(conf);
        spark.setLogLevel("WARN");
    }

    @AfterAll
    static void stopSpark() {
        if (spark != null) {
            spark.close();
        }
    }

    /** Element i of partition p's vector in round k: small integers, so sums are exact in any order. */
    static double value(int p, int k, int i) {
        return Math.floorMod(i * 13 + p * 5 + k * 3, 11) - 5;
    }

    static JavaRDD<Integer> partitions() {
        List<Integer> ids = new ArrayList<>();
        for (int p = 0; p < TASKS; p++) {
            ids.add(p);
        }
        return spark.parallelize(ids, TASKS);
    }

    @Test
    void tasksAllReduceDoubleAndFloatArrays() {
        List<Object[]> out = PanamaxBarrier.mapPartitions(partitions(), (ctx, it) -> {
            int p = ctx.partitionId();
            Communicator c = PanamaxBarrier.communicator(ctx);
            double[] sum = new double[LENGTH];
            float[] max = new float[LENGTH];
            for (int i = 0; i < LENGTH; i++) {
                sum[i] = value(p, 0, i);
                max[i] = (float) value(p, 1, i);
            }
            PanamaxBarrier.allReduce(ctx, sum, ReduceOp.SUM);
            PanamaxBarrier.allReduce(ctx, max, ReduceOp.MAX);
            return List.<Object[]>of(new Object[] {p, c.rank(), c.size(), sum, max}).iterator();
        }).collect();

        double[] wantSum = new double[LENGTH];
        float[] wantMax = new float[LENGTH];
        Arrays.fill(wantMax, Float.NEGATIVE_INFINITY);
        for (int p = 0; p < TASKS; p++) {
            for (int i = 0; i < LENGTH; i++) {
                wantSum[i] += value(p, 0, i);
                wantMax[i] = Math.max(wantMax[i], (float) value(p, 1, i));
            }
        }
        assertEquals(TASKS, out.size());
        for (Object[] r : out) {
            assertEquals(r[0], r[1], "rank is the partition id");
            assertEquals(TASKS, r[2]);
            assertArrayEquals(wantSum, (double[]) r[3], "sum on partition " + r[0]);
            assertArrayEquals(wantMax, (float[]) r[4], "max on partition " + r[0]);
        }
    }

    @Test
    void tasksShareAVariablePerExecutorOverRounds() {
        int rounds = 3;
        List<double[]> out = PanamaxBarrier.mapPartitions(partitions(), (ctx, it) -> {
            int p = ctx.partitionId();
            SharedVariable v = PanamaxBarrier.sharedVariable(ctx, "weights",
                    SharedReduction.of(DataType.FLOAT64, ReduceOp.AVG));
            List<double[]> results = new ArrayList<>();
            for (int k = 0; k < rounds; k++) {
                double[] mine = new double[LENGTH];
                for (int i = 0; i < LENGTH; i++) {
                    mine[i] = value(p, k, i);
                }
                double[] got = v.commit(mine).getDoubles(Duration.ofSeconds(60));
                double[] tagged = new double[LENGTH + 3];
                tagged[0] = p;
                tagged[1] = k;
                tagged[2] = v.numTasks();
                System.arraycopy(got, 0, tagged, 3, LENGTH);
                results.add(tagged);
            }
            return results.iterator();
        }).collect();

        assertEquals(TASKS * rounds, out.size());
        for (double[] r : out) {
            int k = (int) r[1];
            double[] want = new double[LENGTH];
            for (int p = 0; p < TASKS; p++) {
                for (int i = 0; i < LENGTH; i++) {
                    want[i] += value(p, k, i);
                }
            }
            for (int i = 0; i < LENGTH; i++) {
                want[i] /= TASKS;
            }
            // local[4] runs every task in one executor: one process of 4 tasks.
            assertEquals(TASKS, (int) r[2], "numTasks of the executor");
            assertArrayEquals(want, Arrays.copyOfRange(r, 3, r.length), "partition " + (int) r[0] + " round " + k);
        }
    }

    @Test
    void taskAddressesGiveTheHost() {
        assertEquals("127.0.0.1", PanamaxBarrier.Rendezvous.host("127.0.0.1:37425"));
        assertEquals("::1", PanamaxBarrier.Rendezvous.host("[::1]:37425"));
        assertEquals("node7.cluster", PanamaxBarrier.Rendezvous.host("node7.cluster:7078"));
        assertEquals("node7", PanamaxBarrier.Rendezvous.host("node7"));
    }
}
