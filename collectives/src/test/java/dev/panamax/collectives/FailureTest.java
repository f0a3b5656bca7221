package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import java.lang.foreign.ValueLayout;

/** Mismatches, silent peers and closed peers turn into exceptions on the waiting ranks, never hangs. */
class FailureTest {
    @ParameterizedTest
    @EnumSource(value = Ranks.Transport.class, names = {"LOCAL", "SHM", "TCP"})
    void mismatchedCountsAreReported(Ranks.Transport t) {
        List<Communicator> comms = t.open(2, Duration.ofSeconds(3));
        try {
            Throwable thrown = assertThrows(Throwable.class, () -> RankThreads.run(comms, c -> {
                try (Arena a = Arena.ofConfined()) {
                    // 40000 vs 40004 floats: past the direct path, so the ring's chunk sizes disagree.
                    long count = c.rank() == 0 ? 40_000 : 40_004;
                    MemorySegment s = a.allocate(count * 4, 64);
                    c.allReduce(s, count, DataType.FLOAT32, ReduceOp.SUM);
                }
            }));
            assertTrue(thrown instanceof CollectiveException, () -> "got " + thrown);
            assertTrue(thrown.getMessage().contains("mismatched counts") || thrown.getMessage().contains("timed out"),
                    thrown::getMessage);
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @ParameterizedTest
    @EnumSource(value = Ranks.Transport.class, names = {"LOCAL", "SHM", "TCP"})
    void aSilentPeerTimesOutNamingTheStepAndPeer(Ranks.Transport t) {
        List<Communicator> comms = t.open(2, Duration.ofSeconds(1));
        try (Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(1 << 20, 64);
            comms.get(0).setAlgorithm(Collective.ALL_REDUCE, "ring");
            long start = System.nanoTime();
            CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
                    () -> comms.get(0).allReduce(s, 1 << 18, DataType.FLOAT32, ReduceOp.SUM));
            double seconds = (System.nanoTime() - start) / 1e9;
            assertTrue(seconds < 3, "gave up after " + seconds + " s");
            assertTrue(e.getMessage().contains("allreduce(ring) step 1/3 (reduce-scatter step 1/1)"), e::getMessage);
            assertTrue(e.getMessage().contains("from rank 1"), e::getMessage);
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @ParameterizedTest
    @EnumSource(value = Ranks.Transport.class, names = {"LOCAL", "SHM", "TCP"})
    void aClosedPeerFailsTheOthers(Ranks.Transport t) {
        List<Communicator> comms = t.open(3, Duration.ofSeconds(30));
        try (Arena a = Arena.ofShared()) {
            comms.get(2).close();
            MemorySegment s = a.allocate(1 << 20, 64);
            long start = System.nanoTime();
            List<Throwable> failures = RankThreads.onEachRank(2, r -> {
                try {
                    comms.get(r).allReduce(s.asSlice(r * (1 << 19), 1 << 19), 1 << 17, DataType.FLOAT32, ReduceOp.SUM);
                    return null;
                } catch (CollectiveException e) {
                    return e;
                }
            });
            double seconds = (System.nanoTime() - start) / 1e9;
            assertTrue(seconds < 10, "gave up after " + seconds + " s");
            // Every survivor fails; the first to notice names rank 2, and a rank that fails
            // because that one gave up (its links close) may name it instead.
            assertTrue(failures.stream().allMatch(f -> f instanceof PeerFailedException), () -> "got " + failures);
            assertTrue(failures.stream().anyMatch(f -> ((PeerFailedException) f).peer() == 2), () -> "got " + failures);
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @Test
    void asyncCallsRunInOrderAndComplete() throws Exception {
        List<Communicator> comms = Panamax.local(3);
        try {
            RankThreads.run(comms, c -> {
                try (Arena a = Arena.ofShared()) {
                    MemorySegment x = a.allocate(4 * 1000, 64);
                    MemorySegment y = a.allocate(4 * 1000, 64);
                    x.fill((byte) 0);
                    for (int i = 0; i < 1000; i++) {
                        x.setAtIndex(ValueLayout.JAVA_INT, i, c.rank() + i);
                    }
                    var f1 = c.allReduceAsync(x, y, 1000, DataType.INT32, ReduceOp.SUM);
                    var f2 = c.allReduceAsync(y, y, 1000, DataType.INT32, ReduceOp.MAX);
                    c.barrier(); // a blocking call after async ones waits for them, keeping the order
                    f1.get();
                    f2.get();
                    for (int i = 0; i < 1000; i++) {
                        int got = y.getAtIndex(ValueLayout.JAVA_INT, i);
                        if (got != 3 + 3 * i) {
                            throw new AssertionError("element " + i + " is " + got);
                        }
                    }
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
    }
}
