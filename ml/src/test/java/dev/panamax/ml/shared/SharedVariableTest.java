package dev.panamax.ml.shared;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Shared variables with tasks as threads and ranks as in-JVM communicators: every task of every
 * rank commits a vector per round, and every task's result is checked element-wise against a sum,
 * minimum, maximum or average computed here. The data are small integers, so float sums are
 * exact whatever the order.
 */
class SharedVariableTest {
    static final Duration GET_TIMEOUT = Duration.ofSeconds(60);
    static final Duration COMM_TIMEOUT = Duration.ofSeconds(30);
    static final int ROUNDS = 3;
    /** A prime, and large enough that the local folds run in chunks on several threads. */
    static final int LARGE = 300_007;

    private final List<Communicator> comms = new ArrayList<>();

    @AfterEach
    void closeCommunicators() {
        comms.forEach(Communicator::close);
    }

    /** Value of element i committed by task t of rank r in round k. */
    static int value(int r, int t, int k, int i) {
        return Math.floorMod(i * 31 + r * 7 + t * 3 + k * 5, 17) - 8;
    }

    /** Tasks per rank: the same count everywhere, or (when {@code uneven}) rank r runs r+1 tasks. */
    static int tasksOf(int rank, int tasks, boolean uneven) {
        return uneven ? rank + 1 : tasks;
    }

    static Stream<Arguments> grid() {
        List<Arguments> out = new ArrayList<>();
        for (int ranks : new int[] {1, 3, 4}) {
            for (int tasks : new int[] {1, 3}) {
                for (int length : new int[] {0, 1, 13}) {
                    out.add(Arguments.of(ranks, tasks, false, length));
                }
            }
            out.add(Arguments.of(ranks, 0, true, 13));
        }
        out.add(Arguments.of(3, 2, false, LARGE));
        out.add(Arguments.of(4, 0, true, LARGE));
        return out.stream();
    }

    interface TaskBody {
        void run(int rank, int task, Communicator comm) throws Exception;
    }

    /** A task of a rank: each runs on its own thread. */
    private record Task(int rank, int task) {
    }

    /** Runs {@code body} for every task of every rank, each task on its own thread. */
    void runTasks(int ranks, int tasks, boolean uneven, TaskBody body) {
        comms.addAll(Panamax.local(ranks, COMM_TIMEOUT.toNanos()));
        List<Task> all = new ArrayList<>();
        for (int r = 0; r < ranks; r++) {
            for (int t = 0; t < tasksOf(r, tasks, uneven); t++) {
                all.add(new Task(r, t));
            }
        }
        RankThreads.run(all, t -> body.run(t.rank(), t.task(), comms.get(t.rank())));
    }

    /** The element-wise combination, over all tasks of all ranks, of round k's vectors. */
    static double[] expected(int ranks, int tasks, boolean uneven, int k, int length, ReduceOp op) {
        double[] e = new double[length];
        int total = 0;
        for (int r = 0; r < ranks; r++) {
            total += tasksOf(r, tasks, uneven);
        }
        for (int i = 0; i < length; i++) {
            double acc = op == ReduceOp.MIN ? Double.POSITIVE_INFINITY : op == ReduceOp.MAX ? Double.NEGATIVE_INFINITY
                    : 0;
            for (int r = 0; r < ranks; r++) {
                for (int t = 0; t < tasksOf(r, tasks, uneven); t++) {
                    double v = value(r, t, k, i);
                    acc = switch (op) {
                        case SUM, AVG -> acc + v;
                        case MIN -> Math.min(acc, v);
                        case MAX -> Math.max(acc, v);
                        case PROD -> throw new UnsupportedOperationException();
                    };
                }
            }
            e[i] = op == ReduceOp.AVG ? acc / total : acc;
        }
        return e;
    }

    @ParameterizedTest(name = "{0} ranks, {1} tasks (uneven {2}), length {3}")
    @MethodSource("grid")
    void float64SumOverRounds(int ranks, int tasks, boolean uneven, int length) throws Exception {
        runTasks(ranks, tasks, uneven, (r, t, comm) -> {
            SharedVariable v = SharedVariable.init(comm, "grad", tasksOf(r, tasks, uneven),
                    SharedReduction.of(DataType.FLOAT64, ReduceOp.SUM));
            for (int k = 0; k < ROUNDS; k++) {
                double[] mine = new double[length];
                for (int i = 0; i < length; i++) {
                    mine[i] = value(r, t, k, i);
                }
                SharedVariable.Round round = v.commit(mine);
                assertEquals(k, round.number());
                assertArrayEquals(expected(ranks, tasks, uneven, k, length, ReduceOp.SUM),
                        round.getDoubles(GET_TIMEOUT),
                        "rank " + r + " task " + t + " round " + k);
            }
        });
    }

    @ParameterizedTest(name = "{0} ranks, {1} tasks (uneven {2}), length {3}")
    @MethodSource("grid")
    void float32AvgOverRounds(int ranks, int tasks, boolean uneven, int length) throws Exception {
        runTasks(ranks, tasks, uneven, (r, t, comm) -> {
            SharedVariable v = SharedVariable.init(comm, "avg", tasksOf(r, tasks, uneven),
                    SharedReduction.of(DataType.FLOAT32, ReduceOp.AVG));
            for (int k = 0; k < ROUNDS; k++) {
                float[] mine = new float[length];
                for (int i = 0; i < length; i++) {
                    mine[i] = value(r, t, k, i);
                }
                double[] e = expected(ranks, tasks, uneven, k, length, ReduceOp.SUM);
                int total = totalTasks(ranks, tasks, uneven);
                float[] want = new float[length];
                for (int i = 0; i < length; i++) {
                    want[i] = (float) e[i] / total; // the sum is exact in float; one division, in float
                }
                assertArrayEquals(want, v.commit(mine).getFloats(GET_TIMEOUT),
                        "rank " + r + " task " + t + " round " + k);
            }
        });
    }

    static int totalTasks(int ranks, int tasks, boolean uneven) {
        int total = 0;
        for (int r = 0; r < ranks; r++) {
            total += tasksOf(r, tasks, uneven);
        }
        return total;
    }

    /** A function the communicator does not know takes the all-to-all path; lengths below the rank count included. */
    @ParameterizedTest(name = "{0} ranks, {1} tasks (uneven {2}), length {3}")
    @MethodSource("grid")
    void doubleFunctionOverRounds(int ranks, int tasks, boolean uneven, int length) throws Exception {
        runTasks(ranks, tasks, uneven, (r, t, comm) -> {
            SharedVariable v = SharedVariable.init(comm, "fn", tasksOf(r, tasks, uneven), SharedReduction.ofDoubles((a,
                    b) -> Math.max(a, b)));
            for (int k = 0; k < ROUNDS; k++) {
                double[] mine = new double[length];
                for (int i = 0; i < length; i++) {
                    mine[i] = value(r, t, k, i);
                }
                assertArrayEquals(expected(ranks, tasks, uneven, k, length, ReduceOp.MAX),
                        v.commit(mine).getDoubles(GET_TIMEOUT),
                        "rank " + r + " task " + t + " round " + k);
            }
        });
    }

    @ParameterizedTest(name = "{0} ranks, length {1}")
    @MethodSource("ranksAndLengths")
    void floatFunctionSum(int ranks, int length) throws Exception {
        runTasks(ranks, 2, false, (r, t, comm) -> {
            SharedVariable v = SharedVariable.init(comm, "ffn", 2, SharedReduction.ofFloats((a, b) -> a + b));
            for (int k = 0; k < ROUNDS; k++) {
                float[] mine = new float[length];
                for (int i = 0; i < length; i++) {
                    mine[i] = value(r, t, k, i);
                }
                double[] e = expected(ranks, 2, false, k, length, ReduceOp.SUM);
                float[] want = new float[length];
                for (int i = 0; i < length; i++) {
                    want[i] = (float) e[i];
                }
                assertArrayEquals(want, v.commit(mine).getFloats(GET_TIMEOUT),
                        "rank " + r + " task " + t + " round " + k);
            }
        });
    }

    static Stream<Arguments> ranksAndLengths() {
        return Stream.of(Arguments.of(1, 7), Arguments.of(3, 0), Arguments.of(3, 2), Arguments.of(4, 1),
                Arguments.of(4, 101), Arguments.of(3, LARGE));
    }

    /** Int32 minimum from native segments, read back as segments. */
    @ParameterizedTest(name = "{0} ranks, length {1}")
    @MethodSource("ranksAndLengths")
    void int32MinFromSegments(int ranks, int length) throws Exception {
        runTasks(ranks, 3, false, (r, t, comm) -> {
            SharedVariable v = SharedVariable.init(comm, "min", 3, SharedReduction.of(DataType.INT32, ReduceOp.MIN));
            try (var arena = Arena.ofShared()) {
                for (int k = 0; k < ROUNDS; k++) {
                    MemorySegment mine = arena.allocate(ValueLayout.JAVA_INT, length);
                    for (int i = 0; i < length; i++) {
                        mine.setAtIndex(ValueLayout.JAVA_INT, i, value(r, t, k, i));
                    }
                    MemorySegment got = v.commit(mine).get(GET_TIMEOUT);
                    double[] e = expected(ranks, 3, false, k, length, ReduceOp.MIN);
                    int[] want = new int[length];
                    for (int i = 0; i < length; i++) {
                        want[i] = (int) e[i];
                    }
                    assertArrayEquals(want, got.toArray(ValueLayout.JAVA_INT),
                            "rank " + r + " task " + t + " round " + k);
                }
            }
        });
    }

    /** Iterative use: each round commits a function of the previous round's result. */
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {1, 3, 4})
    void iterationsChainThroughResults(int ranks) throws Exception {
        int tasks = 2;
        int length = 5;
        int iterations = 10;
        runTasks(ranks, tasks, false, (r, t, comm) -> {
            SharedVariable w = SharedVariable.init(comm, "w", tasks, SharedReduction.of(DataType.FLOAT64,
                    ReduceOp.AVG));
            double[] weights = new double[length];
            double[] mirror = new double[length];
            for (int k = 0; k < iterations; k++) {
                double[] mine = new double[length];
                for (int i = 0; i < length; i++) {
                    mine[i] = weights[i] + value(r, t, k, i);
                }
                weights = w.commit(mine).getDoubles(GET_TIMEOUT);
                // The same update computed here: the average of (w + v) over all tasks is w + avg(v).
                double[] avg = expected(ranks, tasks, false, k, length, ReduceOp.AVG);
                for (int i = 0; i < length; i++) {
                    mirror[i] += avg[i];
                }
                assertArrayEquals(mirror, weights, 1e-9, "rank " + r + " task " + t + " iteration " + k);
            }
        });
    }
}
