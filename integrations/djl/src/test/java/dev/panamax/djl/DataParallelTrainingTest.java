package dev.panamax.djl;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.testing.Ports;
import dev.panamax.testing.RankProcesses;
import dev.panamax.testing.RankProcesses.Running;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link DataParallelTraining} with DJL's PyTorch engine on CPU. DJL allows one gradient collector per JVM, so the
 * ranks of a job are processes ({@link DjlRankProcess}): N ranks with the same global batch follow one rank's loss
 * curve, end with identical parameters (having started equal although initialized apart) and exchange every
 * gradient in place; a rank killed mid-training fails the others at once, naming it.
 */
class DataParallelTrainingTest {
    static final int TIMEOUT_SECONDS = 120;
    static final Duration WAIT = Duration.ofSeconds(TIMEOUT_SECONDS);
    static final Duration TIMEOUT = WAIT;
    static final int GLOBAL_BATCH = 48;
    static final int STEPS = 12;
    /** Float sums in another order (the all-reduce's, not the batch mean's) drift by about 1e-7 a step. */
    static final float LOSS_TOLERANCE = 1e-4f;

    /** One rank as this test JVM trains it. */
    static SmallTraining.Outcome trainAlone() {
        List<Communicator> comms = Panamax.local(1, TIMEOUT.toNanos());
        try {
            return SmallTraining.train(comms.getFirst(), GLOBAL_BATCH, STEPS, 100, step -> { });
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    static List<Running> startJob(int n, String... args) throws IOException {
        int port = Ports.freePort();
        List<Running> ranks = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            ProcessBuilder pb = RankProcesses.builder(DjlRankProcess.class, r, n, port, List.of(args));
            pb.environment().put("PANAMAX_TIMEOUT_SECONDS", Integer.toString(TIMEOUT_SECONDS));
            ranks.add(RankProcesses.start(pb));
        }
        return ranks;
    }

    static void destroy(List<Running> ranks) {
        for (Running r : ranks) {
            r.process().destroyForcibly();
        }
    }

    @ParameterizedTest(name = "{0} processes")
    @ValueSource(ints = {2, 3, 4})
    void ranksWithTheSameGlobalBatchFollowOneRanksLossCurve(int n) throws Exception {
        SmallTraining.Outcome alone = trainAlone();
        List<Running> ranks = startJob(n, Integer.toString(GLOBAL_BATCH), Integer.toString(STEPS), "0");
        try {
            float[] global = new float[STEPS];
            float[] first = null;
            for (int r = 0; r < n; r++) {
                Running rank = ranks.get(r);
                assertEquals(0, rank.awaitExit(WAIT), "rank " + r + ": " + rank.lines());
                float[] local = DjlRankProcess.parse(rank.line("LOSSES "), false);
                for (int s = 0; s < STEPS; s++) {
                    global[s] += local[s] / n;
                }
                float[] parameters = DjlRankProcess.parse(rank.line("PARAMETERS "), true);
                if (first == null) {
                    first = parameters;
                } else {
                    assertArrayEquals(first, parameters, "rank " + r + " ends with rank 0's parameters, bit for bit");
                }
                assertEquals("STATS 4 0 0 " + STEPS, rank.line("STATS "),
                        "rank " + r + ": two weights and two biases, all exchanged on the tensors' own memory");
            }
            float[] expected = alone.localLosses();
            for (int s = 0; s < STEPS; s++) {
                assertEquals(expected[s], global[s], LOSS_TOLERANCE, "the loss at step " + (s + 1));
            }
            assertTrue(expected[STEPS - 1] < expected[0] * 0.9, "it learns: " + expected[0] + " -> "
                    + expected[STEPS - 1]);
            float[] a = alone.parameters();
            for (int i = 0; i < a.length; i++) {
                assertEquals(a[i], first[i], 1e-4f, "parameter element " + i + " against one rank's");
            }
        } finally {
            destroy(ranks);
        }
    }

    @Test
    void gradientsExchangedThroughCopiesGiveTheSameTrainingAndAreCounted() throws Exception {
        List<Running> inPlace = startJob(2, Integer.toString(GLOBAL_BATCH), "4", "0");
        List<Running> copied = startJob(2, Integer.toString(GLOBAL_BATCH), "4", "0", "copies");
        try {
            for (int r = 0; r < 2; r++) {
                assertEquals(0, inPlace.get(r).awaitExit(WAIT), inPlace.get(r).lines().toString());
                assertEquals(0, copied.get(r).awaitExit(WAIT), copied.get(r).lines().toString());
                assertEquals(inPlace.get(r).line("PARAMETERS "), copied.get(r).line("PARAMETERS "),
                        "rank " + r + ": the same parameters, bit for bit");
                // 4 gradients copied in and out at every step: (64*32 + 32 + 32*4 + 4) floats, twice, 4 steps
                long bytes = 2L * 4 * Float.BYTES * (64 * 32 + 32 + 32 * 4 + 4);
                assertEquals("STATS 0 4 " + bytes + " 4", copied.get(r).line("STATS "), "rank " + r);
            }
        } finally {
            destroy(inPlace);
            destroy(copied);
        }
    }

    @Test
    void aRankKilledMidTrainingFailsTheOthersNamingIt() throws Exception {
        List<Running> ranks = startJob(3, Integer.toString(GLOBAL_BATCH), "100000", "20");
        try {
            Running victim = ranks.get(1);
            assertTrue(victim.awaitLine("STEP 3", Duration.ofSeconds(60)), "rank 1 trains: " + victim.lines());
            long killed = System.nanoTime();
            victim.process().destroyForcibly(); // SIGKILL
            for (int r : new int[] {0, 2}) {
                Running rank = ranks.get(r);
                assertEquals(3, rank.awaitExit(Duration.ofSeconds(60)), "rank " + r + " fails: " + rank.lines());
                String failure = rank.line("FAILED ");
                // the peer seen dead ("peer rank 1 (pid N) died") or reported by the other survivor ("rank 1 failed")
                assertTrue(failure != null && failure.contains("DataParallelException: rank " + r)
                        && (failure.contains("peer rank 1 (pid " + victim.process().pid() + ") died")
                            || failure.contains("rank 1 failed")), "rank " + r + " names rank 1: " + failure);
            }
            double seconds = (System.nanoTime() - killed) / 1e9;
            assertTrue(seconds < TIMEOUT_SECONDS / 4.0, "the others failed after " + seconds + " s, not at once");
        } finally {
            destroy(ranks);
        }
    }

    @Test
    void aContiguousCpuTensorIsMappedOnItsOwnMemory() {
        SmallTraining.batch(NDManager.newBaseManager(), 0, 1).close(); // loads the engine with the test settings
        try (NDManager m = NDManager.newBaseManager()) {
            NDArray a = m.arange(12f).reshape(new Shape(3, 4));
            MemorySegment s = TensorMemory.view(a);
            assertNotNull(s, "a contiguous CPU tensor is mapped");
            assertEquals(12L * Float.BYTES, s.byteSize());
            s.set(ValueLayout.JAVA_FLOAT, 5 * Float.BYTES, -7f);
            assertEquals(-7f, a.getFloat(1, 1), "a write through the segment is the tensor's");
            assertEquals(s.address(), TensorMemory.address(a), "the same address every time");
            assertEquals(Engine.getInstance().getEngineName(), "PyTorch");
            assertNull(TensorMemory.view(a.transpose()), "a transposed view is not contiguous: the engine copies it");
        }
    }

    @Test
    void trainingWithoutTheBroadcastIsRefusedNamingTheFix() {
        List<Communicator> comms = Panamax.local(1, TIMEOUT.toNanos());
        try {
            DataParallelTraining dp = DataParallelTraining.over(comms.getFirst());
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> dp.onTrainingBatch(null, null));
            assertTrue(e.getMessage().contains("call DataParallelTraining.initialize(trainer, shapes)"),
                    e.getMessage());
            dp.close();
            dp.close();
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @Test
    void inElasticModeTheSurvivorsOfAKilledRankTrainOnWithEqualParameters() throws Exception {
        int steps = 40;
        List<Running> ranks = startJob(4, Integer.toString(GLOBAL_BATCH), Integer.toString(steps), "30", "elastic");
        try {
            Running victim = ranks.get(2);
            assertTrue(victim.awaitLine("STEP 8", Duration.ofSeconds(60)), "rank 2 trains: " + victim.lines());
            victim.process().destroyForcibly(); // SIGKILL
            String parameters = null;
            for (int r : new int[] {0, 1, 3}) {
                Running rank = ranks.get(r);
                assertEquals(0, rank.awaitExit(WAIT), "rank " + r + " goes on: " + rank.lines());
                String recovery = rank.line("RECOVERY ");
                assertNotNull(recovery, "rank " + r + ": " + rank.lines());
                assertTrue(recovery.endsWith(" 4 3"), recovery);
                if (parameters == null) {
                    parameters = rank.line("PARAMETERS ");
                } else {
                    assertEquals(parameters, rank.line("PARAMETERS "), "rank " + r + ": the same parameters, bit "
                            + "for bit");
                }
                float[] losses = DjlRankProcess.parse(rank.line("LOSSES "), false);
                assertTrue(losses[steps - 1] < losses[0] * 0.9, "rank " + r + " learns on: " + rank.line("LOSSES "));
            }
        } finally {
            destroy(ranks);
        }
    }
}
