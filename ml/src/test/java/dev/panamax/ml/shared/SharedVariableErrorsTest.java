package dev.panamax.ml.shared;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Misuse and failures of shared variables give errors that say what is wrong, instead of hangs. */
class SharedVariableErrorsTest {
    static final Duration LONG = Duration.ofSeconds(60);
    static final SharedReduction SUM64 = SharedReduction.of(DataType.FLOAT64, ReduceOp.SUM);

    private final List<Communicator> comms = new ArrayList<>();

    @AfterEach
    void closeCommunicators() {
        comms.forEach(Communicator::close);
    }

    List<Communicator> open(int ranks) {
        List<Communicator> c = Panamax.local(ranks, Duration.ofSeconds(30).toNanos());
        comms.addAll(c);
        return c;
    }

    @Test
    void commitBeyondNumTasksNamesTheCount() {
        List<Communicator> c = open(2);
        SharedVariable v0 = SharedVariable.init(c.get(0), "x", 1, SUM64);
        SharedVariable.Round first = v0.commit(new double[] {1, 2});
        // Rank 1 has not committed, so round 0 is still reducing: a second commit here is one too many.
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> v0.commit(new double[] {3, 4}));
        assertTrue(e.getMessage().contains("commit 2") && e.getMessage().contains("takes 1"), e.getMessage());
        SharedVariable v1 = SharedVariable.init(c.get(1), "x", 1, SUM64);
        assertArrayEquals(new double[] {11, 22}, v1.commit(new double[] {10, 20}).getDoubles(LONG));
        assertArrayEquals(new double[] {11, 22}, first.getDoubles(LONG));
        // The round has ended: the next commit begins round 1.
        assertEquals(1, v0.commit(new double[] {0, 0}).number());
        assertArrayEquals(new double[] {1, 1}, v1.commit(new double[] {1, 1}).getDoubles(LONG));
    }

    @Test
    void lengthMismatchWithinAProcessIsRejected() {
        SharedVariable v = SharedVariable.init(open(1).get(0), "x", 2, SUM64);
        SharedVariable.Round round = v.commit(new double[3]);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> v.commit(new double[4]));
        assertTrue(e.getMessage().contains("4 elements") && e.getMessage().contains("had 3"), e.getMessage());
        assertFalse(round.isDone());
        assertArrayEquals(new double[] {2, 2, 2}, v.commit(new double[] {2, 2, 2}).getDoubles(LONG));
    }

    @Test
    void lengthMismatchAcrossProcessesFailsTheRoundOnEveryRank() {
        List<Communicator> c = open(2);
        SharedVariable.Round r0 = SharedVariable.init(c.get(0), "x", 1, SUM64).commit(new double[3]);
        SharedVariable.Round r1 = SharedVariable.init(c.get(1), "x", 1, SUM64).commit(new double[4]);
        for (SharedVariable.Round r : List.of(r0, r1)) {
            CollectiveException e = assertThrows(CollectiveException.class, () -> r.getDoubles(LONG));
            assertTrue(e.getMessage().contains("different lengths") && e.getMessage().contains("rank 1: 4"),
                    e.getMessage());
        }
        // The processes agreed to skip that all-reduce, so the variable goes on with the next round.
        SharedVariable.Round n0 = SharedVariable.lookup(c.get(0), "x").commit(new double[] {1});
        SharedVariable.Round n1 = SharedVariable.lookup(c.get(1), "x").commit(new double[] {2});
        assertArrayEquals(new double[] {3}, n0.getDoubles(LONG));
        assertArrayEquals(new double[] {3}, n1.getDoubles(LONG));
    }

    @Test
    void unknownKeyNamesTheKnownOnes() {
        Communicator c = open(1).get(0);
        SharedVariable.init(c, "weights", 1, SUM64);
        NoSuchElementException e = assertThrows(NoSuchElementException.class, () -> SharedVariable.lookup(c,
                "wieghts"));
        assertTrue(e.getMessage().contains("'wieghts'") && e.getMessage().contains("[weights]"), e.getMessage());
    }

    @Test
    void timeoutSaysHowManyTasksCommitted() {
        SharedVariable v = SharedVariable.init(open(1).get(0), "x", 3, SUM64);
        SharedVariable.Round r = v.commit(new double[] {1});
        CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class, () ->
                r.getDoubles(Duration.ofMillis(200)));
        assertTrue(e.getMessage().contains("1 of 3 tasks"), e.getMessage());
    }

    @Test
    void timeoutWhileAnotherProcessIsMissingSaysSo() {
        SharedVariable v = SharedVariable.init(open(2).get(0), "x", 1, SUM64);
        SharedVariable.Round r = v.commit(new double[] {1});
        CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class, () ->
                r.getDoubles(Duration.ofMillis(200)));
        assertTrue(e.getMessage().contains("other processes"), e.getMessage());
        v.close();
    }

    @Test
    void initWithOtherSettingsIsRejectedAndSameSettingsJoin() {
        Communicator c = open(1).get(0);
        SharedVariable a = SharedVariable.init(c, "x", 2, SUM64);
        assertThrows(IllegalArgumentException.class, () -> SharedVariable.init(c, "x", 3, SUM64));
        assertThrows(IllegalArgumentException.class, () ->
                SharedVariable.init(c, "x", 2, SharedReduction.of(DataType.FLOAT64, ReduceOp.MAX)));
        assertThrows(IllegalArgumentException.class, () -> SharedVariable.init(c, "x", 0, SUM64));
        SharedVariable b = SharedVariable.init(c, "x", 2, SharedReduction.of(DataType.FLOAT64, ReduceOp.SUM));
        a.commit(new double[] {1});
        assertArrayEquals(new double[] {3}, b.commit(new double[] {2}).getDoubles(LONG));
    }

    @Test
    void wrongElementTypeIsRejected() {
        SharedVariable v = SharedVariable.init(open(1).get(0), "x", 1, SUM64);
        assertThrows(IllegalArgumentException.class, () -> v.commit(new float[2]));
        assertThrows(IllegalArgumentException.class, () -> v.commit(MemorySegment.ofArray(new byte[5])));
        SharedVariable.Round r = v.commit(new double[] {1});
        assertThrows(IllegalStateException.class, () -> r.getFloats(LONG));
    }

    @Test
    void failingFunctionOnOneRankFailsTheRoundEverywhere() {
        List<Communicator> c = open(3);
        List<SharedVariable.Round> rounds = new ArrayList<>();
        for (int r = 0; r < 3; r++) {
            int rank = r;
            SharedVariable v = SharedVariable.init(c.get(r), "f", 2, SharedReduction.ofDoubles((a, b) -> {
                if (rank == 1) {
                    throw new ArithmeticException("boom on rank 1");
                }
                return a + b;
            }));
            rounds.add(v.commit(new double[] {1}));
            rounds.add(v.commit(new double[] {2}));
        }
        for (SharedVariable.Round r : rounds) {
            CollectiveException e = assertThrows(CollectiveException.class, () -> r.getDoubles(LONG));
            assertTrue(e.getMessage().contains("boom on rank 1") || e.getMessage().contains("failed on rank(s) 1"),
                    e.getMessage());
        }
    }

    @Test
    void variablesThatFinishInDifferentOrdersOnDifferentRanksBothComplete() throws Exception {
        List<Communicator> c = open(2);
        SharedVariable a0 = SharedVariable.init(c.get(0), "a", 1, SUM64);
        SharedVariable b0 = SharedVariable.init(c.get(0), "b", 1, SUM64);
        SharedVariable a1 = SharedVariable.init(c.get(1), "a", 1, SUM64);
        SharedVariable b1 = SharedVariable.init(c.get(1), "b", 1, SUM64);
        SharedVariable.Round ra0 = a0.commit(new double[] {1});
        SharedVariable.Round rb1 = b1.commit(new double[] {10, 10});
        Thread.sleep(100); // each rank now proposes a different variable first
        SharedVariable.Round rb0 = b0.commit(new double[] {20, 20});
        SharedVariable.Round ra1 = a1.commit(new double[] {2});
        assertArrayEquals(new double[] {3}, ra0.getDoubles(LONG));
        assertArrayEquals(new double[] {3}, ra1.getDoubles(LONG));
        assertArrayEquals(new double[] {30, 30}, rb0.getDoubles(LONG));
        assertArrayEquals(new double[] {30, 30}, rb1.getDoubles(LONG));
    }

    @Test
    void readersOfALaterStageGetTheLatestRound() throws Exception {
        Communicator c = open(1).get(0);
        SharedVariable v = SharedVariable.init(c, "x", 2, SUM64);
        IllegalStateException none = assertThrows(IllegalStateException.class, () -> v.getDoubles(LONG));
        assertTrue(none.getMessage().contains("no round"), none.getMessage());
        v.commit(new double[] {1});
        // A reader that waits before the last commit arrives gets the result as soon as it is there.
        CompletableFuture<double[]> reader = CompletableFuture.supplyAsync(() -> SharedVariable.lookup(c, "x")
                .getDoubles(LONG));
        v.commit(new double[] {2});
        assertArrayEquals(new double[] {3}, reader.get(60, TimeUnit.SECONDS));
        assertArrayEquals(new double[] {3}, SharedVariable.lookup(c, "x").getDoubles(LONG));
        assertEquals(0, v.latest().number());
    }

    @Test
    void closeFailsTheCollectingRoundAndFreesTheKey() {
        Communicator c = open(1).get(0);
        SharedVariable v = SharedVariable.init(c, "x", 2, SUM64);
        SharedVariable.Round r = v.commit(new double[] {1});
        v.close();
        v.close();
        CollectiveException e = assertThrows(CollectiveException.class, () -> r.getDoubles(LONG));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> v.commit(new double[] {1}));
        assertThrows(NoSuchElementException.class, () -> SharedVariable.lookup(c, "x"));
        SharedVariable again = SharedVariable.init(c, "x", 1, SharedReduction.of(DataType.FLOAT64, ReduceOp.MIN));
        assertSame(again.reduction().type(), DataType.FLOAT64);
        assertArrayEquals(new double[] {4}, again.commit(new double[] {4}).getDoubles(LONG));
    }
}
