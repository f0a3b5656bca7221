package dev.panamax.ml;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.IntFunction;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link GradientCompression#powerSgd}: exact when the ranks' sum has rank at most r, the whole gradient delivered
 * over steps by error feedback when it has more, small buckets and the first steps plain, every rank the same bits.
 */
class PowerSgdCompressionTest {
    /** Rank r's gradient: a rank-1 matrix u v^T on the square of side {@code side}, cut to {@code count}. */
    private static double[] rankOne(int r, int side, int count) {
        SplittableRandom random = new SplittableRandom(77L + r);
        double[] u = new double[side];
        double[] v = new double[side];
        for (int i = 0; i < side; i++) {
            u[i] = random.nextDouble(-1, 1);
            v[i] = random.nextDouble(-1, 1);
        }
        // Rows past the count are zero, so the zero padding keeps the matrix rank one.
        for (int i = (count + side - 1) / side; i < side; i++) {
            u[i] = 0;
        }
        if (count % side != 0) {
            u[count / side] = 0;
        }
        double[] g = new double[count];
        for (int idx = 0; idx < count; idx++) {
            g[idx] = u[idx / side] * v[idx % side];
        }
        return g;
    }

    /** Rank r's gradient of full rank. */
    private static double[] random(int r, int count) {
        SplittableRandom random = new SplittableRandom(1000L + r);
        double[] g = new double[count];
        for (int i = 0; i < count; i++) {
            g[i] = random.nextDouble(-1, 1);
        }
        return g;
    }

    /**
     * Runs {@code steps} all-reduces of each rank's {@code gradient} (the same every step) through {@code hook} on
     * {@code n} ranks; every rank's output of every step.
     */
    private static List<double[][]> run(int n, IntFunction<double[]> gradient, DataType type, ReduceOp op,
            int steps, IntFunction<GradientCompression> hook) {
        return LocalRanks.run(n, comm -> {
            double[] g = gradient.apply(comm.rank());
            double[][] out = new double[steps][];
            try (Arena arena = Arena.ofShared(); GradientCompression h = hook.apply(0)) {
                MemorySegment bucket = arena.allocate(Math.max(8, g.length * type.byteSize()), 64);
                for (int t = 0; t < steps; t++) {
                    for (int i = 0; i < g.length; i++) {
                        if (type == DataType.FLOAT64) {
                            bucket.setAtIndex(ValueLayout.JAVA_DOUBLE, i, g[i]);
                        } else {
                            bucket.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) g[i]);
                        }
                    }
                    h.allReduce(comm, bucket, g.length, type, op);
                    out[t] = new double[g.length];
                    for (int i = 0; i < g.length; i++) {
                        out[t][i] = type == DataType.FLOAT64 ? bucket.getAtIndex(ValueLayout.JAVA_DOUBLE, i)
                                : bucket.getAtIndex(ValueLayout.JAVA_FLOAT, i);
                    }
                }
            }
            return out;
        });
    }

    private static double[] average(int n, IntFunction<double[]> gradient) {
        double[] avg = gradient.apply(0).clone();
        for (int r = 1; r < n; r++) {
            double[] g = gradient.apply(r);
            for (int i = 0; i < avg.length; i++) {
                avg[i] += g[i];
            }
        }
        for (int i = 0; i < avg.length; i++) {
            avg[i] /= n;
        }
        return avg;
    }

    /** ||a - b|| / ||b||. */
    private static double relativeError(double[] a, double[] b) {
        double diff = 0;
        double norm = 0;
        for (int i = 0; i < b.length; i++) {
            diff += (a[i] - b[i]) * (a[i] - b[i]);
            norm += b[i] * b[i];
        }
        return Math.sqrt(diff / norm);
    }

    private static void assertSameOnEveryRank(List<double[][]> results) {
        for (double[][] r : results) {
            for (int t = 0; t < r.length; t++) {
                assertArrayEquals(results.getFirst()[t], r[t], "every rank gets the same bits at step " + t);
            }
        }
    }

    @Test
    void aSumOfRankAtMostRComesBackExactly() {
        for (int n = 1; n <= 4; n++) {
            for (DataType type : new DataType[] {DataType.FLOAT32, DataType.FLOAT64}) {
                for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.AVG}) {
                    for (int count : new int[] {900, 877, 4099}) {
                        int side = (int) Math.ceil(Math.sqrt(count));
                        IntFunction<double[]> g = r -> rankOne(r, side, count);
                        List<double[][]> results = run(n, g, type, op, 2, h -> GradientCompression.powerSgd(4));
                        assertSameOnEveryRank(results);
                        double[] want = average(n, g);
                        double scale = op == ReduceOp.AVG ? 1 : n;
                        for (int i = 0; i < want.length; i++) {
                            want[i] *= scale;
                        }
                        double tolerance = type == DataType.FLOAT64 ? 1e-12 : 1e-5;
                        for (int t = 0; t < 2; t++) {
                            double e = relativeError(results.getFirst()[t], want);
                            assertTrue(e < tolerance, n + " ranks " + type + " " + op + " count " + count + " step "
                                    + t + ": relative error " + e);
                        }
                    }
                }
            }
        }
    }

    @Test
    void errorFeedbackDeliversTheWholeGradientOverSteps() {
        // A full-rank gradient, the same every step: a rank-1 approximation of it is far off, but what each step
        // leaves out is sent later, so the mean of the outputs approaches the exact average.
        int n = 3;
        int count = 900;
        int steps = 200;
        IntFunction<double[]> g = r -> random(r, count);
        List<double[][]> results = run(n, g, DataType.FLOAT32, ReduceOp.AVG, steps,
                h -> GradientCompression.powerSgd(1));
        assertSameOnEveryRank(results);
        double[] want = average(n, g);
        double[][] out = results.getFirst();
        double first = relativeError(out[0], want);
        assertTrue(first > 0.5, "one rank-1 step is far from a full-rank average: " + first);
        double[] mean = new double[count];
        for (double[] step : out) {
            for (int i = 0; i < count; i++) {
                mean[i] += step[i] / steps;
            }
        }
        double meanError = relativeError(mean, want);
        assertTrue(meanError < 0.1, "the mean of " + steps + " steps is within 10%: " + meanError);
    }

    @Test
    void smallBucketsAndTheFirstStepsAreThePlainAllReduce() {
        IntFunction<double[]> g4099 = r -> random(r, 4099);
        List<double[][]> plain = run(3, g4099, DataType.FLOAT32, ReduceOp.AVG, 3, h -> GradientCompression.none());
        List<double[][]> delayed = run(3, g4099, DataType.FLOAT32, ReduceOp.AVG, 3,
                h -> GradientCompression.powerSgd(2, 2));
        assertArrayEquals(plain.getFirst()[0], delayed.getFirst()[0], "step 1 plain");
        assertArrayEquals(plain.getFirst()[1], delayed.getFirst()[1], "step 2 plain");
        assertTrue(relativeError(delayed.getFirst()[2], plain.getFirst()[2]) > 0.1, "step 3 compressed");
        // 100 elements (side 10): rank 4 would send 2 x 40, not half of 100.
        for (int count : new int[] {1, 3, 13, 100}) {
            IntFunction<double[]> g = r -> random(r, count);
            assertArrayEquals(run(3, g, DataType.FLOAT32, ReduceOp.SUM, 1, h -> GradientCompression.none())
                            .getFirst()[0],
                    run(3, g, DataType.FLOAT32, ReduceOp.SUM, 1, h -> GradientCompression.powerSgd(4)).getFirst()[0],
                    "count " + count);
        }
    }

    @Test
    void refusesWhatItCannotCarry() {
        assertThrows(IllegalArgumentException.class, () -> GradientCompression.powerSgd(0));
        assertThrows(IllegalArgumentException.class, () -> GradientCompression.powerSgd(1, -1));
        GradientCompression hook = GradientCompression.powerSgd(2);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> hook.requireSupported(DataType.INT32));
        assertTrue(e.getMessage().contains("int32"), e.getMessage());
        LocalRanks.run(1, comm -> {
            try (Arena arena = Arena.ofShared()) {
                MemorySegment bucket = arena.allocate(8);
                IllegalArgumentException max = assertThrows(IllegalArgumentException.class,
                        () -> hook.allReduce(comm, bucket, 2, DataType.FLOAT32, ReduceOp.MAX));
                assertTrue(max.getMessage().contains("MAX"), max.getMessage());
                hook.allReduce(comm, bucket, 0, DataType.FLOAT32, ReduceOp.SUM);
            }
            return null;
        });
        hook.close();
        assertEquals("powersgd:2", hook.toString());
    }

    @Test
    void orthonormalizedColumnsAreOrthonormalAndEmptyColumnsStayZero() {
        int rows = 30;
        int cols = 4;
        double[] a = random(5, rows * cols);
        for (int i = 0; i < rows; i++) {
            a[i * cols + 2] = 2 * a[i * cols]; // column 2 depends on column 0: nothing is left of it
        }
        PowerSgdCompression.orthonormalizeColumns(a, rows, cols);
        for (int k = 0; k < cols; k++) {
            for (int l = 0; l < cols; l++) {
                double dot = 0;
                for (int i = 0; i < rows; i++) {
                    dot += a[i * cols + k] * a[i * cols + l];
                }
                double want = k == l && k != 2 ? 1 : 0;
                assertEquals(want, dot, 1e-12, "columns " + k + ", " + l);
            }
        }
    }
}
