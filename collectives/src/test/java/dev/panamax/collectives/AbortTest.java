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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import java.util.ArrayList;

/** {@link Communicator#abort()}: from another thread, while a collective blocks, without taking its lock. */
class AbortTest {
    /** A blocking call on a daemon thread, completing with what it threw (or null). */
    private static CompletableFuture<Throwable> call(Communicator c, MemorySegment buf, long count) {
        CompletableFuture<Throwable> f = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> {
            try {
                c.allReduce(buf, count, DataType.FLOAT32, ReduceOp.SUM);
                f.complete(null);
            } catch (Throwable t) {
                f.complete(t);
            }
        });
        return f;
    }

    @ParameterizedTest
    @EnumSource(value = Ranks.Transport.class, names = {"LOCAL", "SHM", "TCP"})
    void abortWakesABlockedCallAtOnceAndThePeersNameThisRank(Ranks.Transport t) throws Exception {
        abortWakesABlockedCall(t, 1 << 16);
    }

    /** Small enough for the shared windows: the ranks wait on each other's windows rather than on messages. */
    @Test
    void abortWakesABlockedSmallCallOverSharedWindows() throws Exception {
        abortWakesABlockedCall(Ranks.Transport.SHM, 16);
    }

    private static void abortWakesABlockedCall(Ranks.Transport t, long count) throws Exception {
        // Rank 1 never calls; ranks 0 and 2 block in the all-reduce; rank 0 is aborted from here.
        List<Communicator> comms = t.open(3, Duration.ofSeconds(30));
        try (Arena a = Arena.ofShared()) {
            CompletableFuture<Throwable> r0 = call(comms.get(0), a.allocate(count * 4, 64), count);
            CompletableFuture<Throwable> r2 = call(comms.get(2), a.allocate(count * 4, 64), count);
            Thread.sleep(300);
            assertTrue(!r0.isDone() && !r2.isDone(), "the calls should block on rank 1");

            long start = System.nanoTime();
            comms.get(0).abort();
            double abortMs = (System.nanoTime() - start) / 1e6;
            Throwable e0 = r0.get(5, TimeUnit.SECONDS);
            double wokeMs = (System.nanoTime() - start) / 1e6;
            System.out.printf("%s: abort() returned in %.2f ms, the blocked call threw after %.2f ms%n", t, abortMs,
                    wokeMs);
            assertTrue(e0 instanceof CollectiveException, () -> "got " + e0);
            assertTrue(e0.getMessage().contains("aborted"), e0::getMessage);
            assertTrue(abortMs < 100, "abort() took " + abortMs + " ms");
            assertTrue(wokeMs < 100, "the blocked call threw after " + wokeMs + " ms");

            Throwable e2 = r2.get(10, TimeUnit.SECONDS);
            assertTrue(e2 instanceof PeerFailedException p && p.peer() == 0, () -> "rank 2 got " + e2);

            // Unusable afterwards, idempotent, and close() after it is a no-op.
            MemorySegment b = a.allocate(64, 64);
            assertThrows(IllegalStateException.class, () ->
                    comms.get(0).allReduce(b, 16, DataType.FLOAT32, ReduceOp.SUM));
            assertThrows(IllegalStateException.class, () -> comms.get(0).allocate(64));
            assertDoesNotThrow(() -> comms.get(0).abort());
            assertDoesNotThrow(() -> comms.get(0).close());
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @Test
    void pendingAsyncCallsFailAfterAbort() throws Exception {
        List<Communicator> comms = Panamax.local(2, Duration.ofSeconds(30).toNanos());
        try (Arena a = Arena.ofShared()) {
            MemorySegment x = a.allocate(4096, 64);
            CompletableFuture<Void> f1 = comms.get(0).allReduceAsync(x, x, 1024, DataType.FLOAT32, ReduceOp.SUM);
            CompletableFuture<Void> f2 = comms.get(0).barrierAsync();
            Thread.sleep(100);
            comms.get(0).abort();
            ExecutionException e1 = assertThrows(ExecutionException.class, () -> f1.get(2, TimeUnit.SECONDS));
            assertTrue(e1.getCause().getMessage().contains("aborted"), e1.getCause()::getMessage);
            assertThrows(ExecutionException.class, () -> f2.get(2, TimeUnit.SECONDS));
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @Test
    void abortOfASplitBreaksTheWholeFamily() throws Exception {
        List<Communicator> comms = Panamax.local(4, Duration.ofSeconds(30).toNanos());
        try {
            List<Communicator> subs = RankThreads.onEachRank(4, r -> comms.get(r).split(r % 2, r));
            // Rank 2's sub-communicator (with rank 0) is aborted while rank 0 waits in the parent.
            try (Arena a = Arena.ofShared()) {
                CompletableFuture<Throwable> r0 = call(comms.get(0), a.allocate(4096, 64), 1024);
                Thread.sleep(200);
                subs.get(2).abort();
                assertThrows(IllegalStateException.class, () -> comms.get(2).barrier());
                assertThrows(IllegalStateException.class, () -> subs.get(2).barrier());
                Throwable e0 = r0.get(10, TimeUnit.SECONDS);
                assertTrue(e0 instanceof PeerFailedException p && p.peer() == 2, () -> "rank 0 got " + e0);
            }
            RankThreads.closeAll(subs);
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @ParameterizedTest
    @EnumSource(value = Ranks.Transport.class, names = {"LOCAL", "SHM", "TCP"})
    void abortRacingBusyCollectivesIsSafe(Ranks.Transport t) throws Exception {
        // Both ranks run collectives back to back; rank 0 is aborted at a random moment, so the
        // links close while threads poll them (small and large, inline and by reference).
        for (int round = 0; round < 4; round++) {
            List<Communicator> comms = t.open(2, Duration.ofSeconds(10));
            try {
                List<CompletableFuture<Throwable>> loops = new ArrayList<>();
                for (Communicator c : comms) {
                    CompletableFuture<Throwable> f = new CompletableFuture<>();
                    loops.add(f);
                    Thread.ofPlatform().daemon().start(() -> {
                        MemorySegment buf = c.allocate(4L << 20);
                        try {
                            for (int i = 0; ; i++) {
                                long count = (i & 1) == 0 ? 16 : 1 << 20;
                                c.allReduce(buf, count, DataType.FLOAT32, ReduceOp.SUM);
                            }
                        } catch (Throwable e) {
                            f.complete(e);
                        }
                    });
                }
                Thread.sleep(50 + ThreadLocalRandom.current().nextInt(200));
                comms.get(0).abort();
                Throwable e0 = loops.get(0).get(5, TimeUnit.SECONDS);
                Throwable e1 = loops.get(1).get(10, TimeUnit.SECONDS);
                assertTrue(e0 instanceof CollectiveException || e0 instanceof IllegalStateException, () ->
                        "rank 0 got " + e0);
                assertTrue(e1 instanceof PeerFailedException p && p.peer() == 0, () -> "rank 1 got " + e1);
            } finally {
                RankThreads.closeAll(comms);
            }
        }
    }

    @Test
    void abortWhileIdleReleasesAtOnce() {
        List<Communicator> comms = Panamax.local(2, Duration.ofSeconds(5).toNanos());
        try {
            comms.get(1).abort();
            assertThrows(IllegalStateException.class, () -> comms.get(1).allocate(8));
            PeerFailedException e = assertThrows(PeerFailedException.class, () -> comms.get(0).barrier());
            assertEquals(1, e.peer());
        } finally {
            RankThreads.closeAll(comms);
        }
    }
}
