package dev.panamax.ml;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.memory.DataType;
import dev.panamax.ml.ShardedOptimizer.Stage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link ShardedOptimizer} against a plain reference: every rank's parameters after a few steps are
 * those of one process applying the same optimizer to the average of the ranks' gradients,
 * written here independently of the class, element by element; for 1-5 ranks, both ZeRO stages,
 * SGD, SGD with momentum and Adam, float64 and float32, with tensors whose sizes leave padding in
 * the buckets and tensors marked ready in a different order on each rank.
 */
class ShardedOptimizerTest {
    /** Tensor sizes in backward order: a single element, primes, one larger than the buckets. */
    static final long[] TENSORS = {1, 7, 13, 2, 100, 31};
    static final int STEPS = 4;

    static Stream<Arguments> grid() {
        List<Arguments> out = new ArrayList<>();
        for (int n : new int[] {1, 2, 3, 4, 5}) {
            for (Stage stage : Stage.values()) {
                for (Optimizer o : List.of(Optimizer.sgd(0.1), Optimizer.sgd(0.05, 0.9), Optimizer.adam(0.01))) {
                    out.add(Arguments.of(n, stage, o, DataType.FLOAT64));
                }
            }
        }
        out.add(Arguments.of(3, Stage.GRADIENTS, Optimizer.adam(0.01), DataType.FLOAT32));
        out.add(Arguments.of(4, Stage.OPTIMIZER_STATE, Optimizer.sgd(0.05, 0.9), DataType.FLOAT32));
        return out.stream();
    }

    /** Rank r's gradient of element i of tensor t at step s: varied, and different on every rank. */
    static double gradient(int rank, int step, int t, long i) {
        return Math.sin(1 + rank * 0.7 + step * 1.3 + t * 0.11 + i * 0.017) * (1 + rank);
    }

    static double initial(int t, long i) {
        return Math.cos(t + i * 0.05);
    }

    /** One process: the same optimizer on the average gradient, written out plainly. */
    static double[][] reference(int n, Optimizer o, boolean float32) {
        double[][] p = new double[TENSORS.length][];
        double[][] m = new double[TENSORS.length][];
        double[][] v = new double[TENSORS.length][];
        for (int t = 0; t < TENSORS.length; t++) {
            p[t] = new double[(int) TENSORS[t]];
            m[t] = new double[p[t].length];
            v[t] = new double[p[t].length];
            for (int i = 0; i < p[t].length; i++) {
                p[t][i] = round(initial(t, i), float32);
            }
        }
        for (int s = 1; s <= STEPS; s++) {
            for (int t = 0; t < TENSORS.length; t++) {
                for (int i = 0; i < p[t].length; i++) {
                    double g = 0;
                    for (int r = 0; r < n; r++) {
                        g += round(gradient(r, s, t, i), float32);
                    }
                    g /= n;
                    switch (o) {
                        case Optimizer.Sgd sgd -> {
                            m[t][i] = sgd.momentum() * m[t][i] + g;
                            p[t][i] -= sgd.learningRate() * m[t][i];
                        }
                        case Optimizer.Adam a -> {
                            m[t][i] = a.beta1() * m[t][i] + (1 - a.beta1()) * g;
                            v[t][i] = a.beta2() * v[t][i] + (1 - a.beta2()) * g * g;
                            double mh = m[t][i] / (1 - Math.pow(a.beta1(), s));
                            double vh = v[t][i] / (1 - Math.pow(a.beta2(), s));
                            p[t][i] -= a.learningRate() * mh / (Math.sqrt(vh) + a.epsilon());
                        }
                    }
                    p[t][i] = round(p[t][i], float32);
                }
            }
        }
        return p;
    }

    private static double round(double x, boolean float32) {
        return float32 ? (float) x : x;
    }

    @ParameterizedTest(name = "{0} ranks, {1}, {2}, {3}")
    @MethodSource("grid")
    void everyRankEndsWithTheReferenceModel(int n, Stage stage, Optimizer o, DataType type) {
        boolean float32 = type == DataType.FLOAT32;
        ValueLayout layout = float32 ? ValueLayout.JAVA_FLOAT : ValueLayout.JAVA_DOUBLE;
        List<double[][]> models = LocalRanks.run(n, comm -> {
            ShardedOptimizer.Builder b = ShardedOptimizer.builder(comm).optimizer(o).stage(stage).type(type)
                    .bucketBytes(16L * (float32 ? 4 : 8));
            for (long c : TENSORS) {
                b.tensor(c);
            }
            try (ShardedOptimizer opt = b.build()) {
                assertTrue(opt.buckets() > 2, "several buckets: " + opt.buckets());
                for (int t = 0; t < TENSORS.length; t++) {
                    for (int i = 0; i < TENSORS[t]; i++) {
                        set(opt.parameters(t), layout, i, initial(t, i));
                    }
                }
                for (int s = 1; s <= STEPS; s++) {
                    for (int t = 0; t < TENSORS.length; t++) {
                        for (int i = 0; i < TENSORS[t]; i++) {
                            set(opt.gradient(t), layout, i, gradient(comm.rank(), s, t, i));
                        }
                    }
                    // rank 0 in backward order, odd ranks in reverse, the others rotated; the last rank leaves
                    // its last one to step()
                    int count = TENSORS.length;
                    for (int k = 0; k < count - (comm.rank() == n - 1 ? 1 : 0); k++) {
                        int r = comm.rank();
                        opt.markReady(r == 0 ? k : r % 2 == 1 ? count - 1 - k : (k + r) % count);
                    }
                    opt.step();
                }
                assertEquals(STEPS, opt.steps());
                double[][] p = new double[TENSORS.length][];
                for (int t = 0; t < TENSORS.length; t++) {
                    p[t] = new double[(int) TENSORS[t]];
                    for (int i = 0; i < p[t].length; i++) {
                        p[t][i] = get(opt.parameters(t), layout, i);
                    }
                }
                return p;
            }
        });
        double[][] expected = reference(n, o, float32);
        double tolerance = float32 ? 1e-5 : 1e-12;
        for (int r = 0; r < n; r++) {
            for (int t = 0; t < TENSORS.length; t++) {
                assertArrayEquals(models.getFirst()[t], models.get(r)[t], 0, "rank " + r + " tensor " + t
                        + ": every rank holds the same model");
                assertArrayEquals(expected[t], models.get(r)[t], tolerance, "rank " + r + " tensor " + t);
            }
        }
    }

    private static void set(MemorySegment s, ValueLayout layout, long i, double x) {
        if (layout == ValueLayout.JAVA_FLOAT) {
            s.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) x);
        } else {
            s.setAtIndex(ValueLayout.JAVA_DOUBLE, i, x);
        }
    }

    private static double get(MemorySegment s, ValueLayout layout, long i) {
        return layout == ValueLayout.JAVA_FLOAT ? s.getAtIndex(ValueLayout.JAVA_FLOAT, i)
                : s.getAtIndex(ValueLayout.JAVA_DOUBLE, i);
    }

    /** The optimizer's state per rank is its share: 1/n of the unsharded state, give or take the padding. */
    @Test
    void stateShrinksByTheWorldSize() {
        long total = 1_000_003;
        List<long[]> sizes = LocalRanks.run(4, comm -> {
            try (ShardedOptimizer opt = ShardedOptimizer.builder(comm).optimizer(Optimizer.adam(1e-3))
                    .tensor(total).tensor(17).build()) {
                return new long[] {opt.optimizerStateBytes(), opt.unshardedStateBytes(), opt.ownedParameters()};
            }
        });
        for (long[] s : sizes) {
            assertEquals(2 * (total + 17) * 8, s[1]);
            assertTrue(s[2] * 4 >= total + 17 && s[2] * 4 <= total + 17 + 4 * 4, "owned " + s[2]);
            assertEquals(2 * s[2] * 8, s[0]);
        }
    }

    @Test
    void misuseIsRefusedNamingWhatIsWrong() {
        LocalRanks.run(1, comm -> {
            assertThrows(IllegalStateException.class, () -> ShardedOptimizer.builder(comm).tensor(3).build());
            assertThrows(IllegalStateException.class,
                    () -> ShardedOptimizer.builder(comm).optimizer(Optimizer.sgd(1)).build());
            assertThrows(IllegalArgumentException.class, () -> ShardedOptimizer.builder(comm).tensor(0));
            assertThrows(IllegalArgumentException.class, () -> ShardedOptimizer.builder(comm).type(DataType.INT32));
            assertThrows(IllegalArgumentException.class, () -> Optimizer.sgd(0.1, 1.0));
            assertThrows(IllegalArgumentException.class, () -> Optimizer.adam(-1));
            ShardedOptimizer opt = ShardedOptimizer.builder(comm).optimizer(Optimizer.sgd(1)).tensor(3).tensor(4)
                    .build();
            opt.markReady(1);
            IllegalStateException twice = assertThrows(IllegalStateException.class, () -> opt.markReady(1));
            assertTrue(twice.getMessage().contains("tensor 1 marked ready twice"), twice.getMessage());
            assertThrows(IndexOutOfBoundsException.class, () -> opt.markReady(2));
            opt.step();
            opt.close();
            opt.close();
            assertThrows(IllegalStateException.class, opt::step);
            return null;
        });
    }

    /** A rank that never steps makes the others' step fail within the timeout instead of hanging. */
    @Test
    void aMissingPeerFailsTheStep() {
        List<String> outcome = LocalRanks.run(2, Duration.ofSeconds(2), comm -> {
            try (ShardedOptimizer opt = ShardedOptimizer.builder(comm).optimizer(Optimizer.sgd(0.1)).tensor(64)
                    .build()) {
                if (comm.rank() == 1) {
                    return "idle";
                }
                CollectiveException e = assertThrows(CollectiveException.class, opt::step);
                return e.getClass().getSimpleName();
            }
        });
        assertEquals("idle", outcome.get(1));
        assertTrue(outcome.get(0).contains("Exception"), outcome.get(0));
    }
}
