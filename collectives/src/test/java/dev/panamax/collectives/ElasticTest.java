package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import dev.panamax.testing.Reference;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link Communicator#revoke()}, {@link Communicator#agree} and {@link Communicator#shrink()} on every
 * transport (ranks as threads): a revoke reaches ranks blocked on a live peer, survivors of a lost
 * rank agree on who is gone and shrink to a communicator whose collectives are right element by
 * element, and a rank that comes too late is told it was left out.
 */
class ElasticTest {
    /** Far beyond what any step here should take: nothing may end by timing out unless it is meant to. */
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    /** A body run on rank r's communicator. */
    private interface RankFunction<T> {
        T apply(Communicator c, int rank) throws Exception;
    }

    /** Runs {@code body} on each communicator, each in a thread of its own; results in order. */
    private static <T> List<T> onEach(List<Communicator> comms, RankFunction<T> body) {
        return RankThreads.onEachRank(comms.size(), r -> body.apply(comms.get(r), r));
    }

    /** An all-reduce on {@code c} of {@code count} float32 and int64 elements, checked against the reference. */
    private static void checkAllReduce(Communicator c, long count) {
        try (Arena a = Arena.ofConfined()) {
            for (DataType type : new DataType[] {DataType.FLOAT32, DataType.INT64}) {
                MemorySegment buf = a.allocate(Math.max(1, count) * type.byteSize(), 64);
                Reference.fill(buf, 0, count, c.rank(), type, ReduceOp.SUM);
                c.allReduce(buf, count, type, ReduceOp.SUM);
                assertNull(Reference.check(buf, 0, count, c.size(), type, ReduceOp.SUM,
                        "rank " + c.rank() + " of " + c.size() + " " + type));
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = Ranks.Transport.class, names = {"LOCAL", "SHM", "TCP"})
    void revokeFailsEveryRankPromptlyAndShrinkRebuildsThemAll(Ranks.Transport t) throws Exception {
        // Ranks 1-3 block in an all-reduce that rank 0 never joins; rank 0 revokes.
        int n = 4;
        List<Communicator> comms = t.open(n, TIMEOUT);
        List<Communicator> shrunk = new ArrayList<>();
        try {
            CountDownLatch blocked = new CountDownLatch(n - 1);
            long[] wokeNanos = new long[n];
            long[] revokedAt = new long[1];
            List<Throwable> errors = onEach(comms, (c, r) -> {
                if (r == 0) {
                    blocked.await(10, TimeUnit.SECONDS);
                    Thread.sleep(300);
                    revokedAt[0] = System.nanoTime();
                    c.revoke();
                    return null;
                }
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment buf = a.allocate(4096, 64);
                    blocked.countDown();
                    c.allReduce(buf, 1024, DataType.FLOAT32, ReduceOp.SUM);
                    return new AssertionError("rank " + r + ": the all-reduce returned");
                } catch (RevokedException e) {
                    wokeNanos[r] = System.nanoTime();
                    return e;
                }
            });
            for (int r = 1; r < n; r++) {
                Throwable e = errors.get(r);
                assertTrue(e instanceof RevokedException re && re.revoker() == 0, "rank " + r + " got " + e);
                double ms = (wokeNanos[r] - revokedAt[0]) / 1e6;
                assertTrue(ms < 5_000, "rank " + r + " heard of the revoke after " + ms + " ms");
            }
            // Every later call fails alike, on every rank; agree and shrink still work.
            RankThreads.run(comms, c -> {
                RevokedException e = assertThrows(RevokedException.class, c::barrier);
                assertEquals(0, e.revoker());
            });
            List<Agreement> agreed = onEach(comms, (c, r) -> c.agree(0xF0L | r));
            for (Agreement a : agreed) {
                assertEquals(new Agreement(0xF0L, List.of()), a);
            }
            shrunk.addAll(onEach(comms, (c, r) -> c.shrink()));
            for (int r = 0; r < n; r++) {
                assertEquals(r, shrunk.get(r).rank());
                assertEquals(n, shrunk.get(r).size());
            }
            RankThreads.run(shrunk, c -> checkAllReduce(c, 1001));
        } finally {
            RankThreads.closeAll(shrunk);
            RankThreads.closeAll(comms);
        }
    }

    @ParameterizedTest
    @EnumSource(value = Ranks.Transport.class, names = {"LOCAL", "SHM", "TCP"})
    void aRevokeRacingBusyCollectivesReachesEveryRank(Ranks.Transport t) throws Exception {
        // Ranks loop all-reduces of 64 B and 1 MiB; another thread revokes rank 1 at random moments of
        // them: whether or not its call sees the revoke before it ends, every rank's loop must end with
        // RevokedException, long before the timeout.
        for (int round = 0; round < 3; round++) {
            int n = 3;
            List<Communicator> comms = t.open(n, TIMEOUT);
            try {
                CountDownLatch running = new CountDownLatch(n);
                Thread.ofPlatform().daemon().start(() -> {
                    try {
                        running.await();
                        Thread.sleep(50 + ThreadLocalRandom.current().nextInt(100));
                    } catch (InterruptedException e) {
                        return;
                    }
                    comms.get(1).revoke();
                });
                long start = System.nanoTime();
                List<Throwable> errors = onEach(comms, (c, r) -> {
                    try (Arena a = Arena.ofConfined()) {
                        MemorySegment buf = a.allocate(1 << 20, 64);
                        running.countDown();
                        for (long i = 0; ; i++) {
                            c.allReduce(buf, i % 2 == 0 ? 16 : 1 << 18, DataType.FLOAT32, ReduceOp.SUM);
                        }
                    } catch (RevokedException e) {
                        return e;
                    }
                });
                double seconds = (System.nanoTime() - start) / 1e9;
                for (Throwable e : errors) {
                    assertEquals(1, ((RevokedException) e).revoker(), e.toString());
                }
                assertTrue(seconds < 10, "the revoke took " + seconds + " s to reach every rank");
            } finally {
                RankThreads.closeAll(comms);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = Ranks.Transport.class, names = {"LOCAL", "SHM", "TCP"})
    void survivorsOfALostRankAgreeOnItAndShrinkToDenseRanks(Ranks.Transport t) throws Exception {
        // 5 ranks run all-reduces; rank 2 is lost (aborted) in the middle of them.
        int n = 5;
        int lost = 2;
        List<Communicator> comms = t.open(n, TIMEOUT);
        List<Communicator> shrunk = new ArrayList<>();
        try {
            List<Object> outcome = onEach(comms, (c, r) -> {
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment buf = a.allocate(4L * 4099, 64);
                    for (int i = 0; ; i++) {
                        if (r == lost && i == 20) {
                            c.abort();
                            return null;
                        }
                        c.allReduce(buf, 4099, DataType.FLOAT32, ReduceOp.SUM);
                    }
                } catch (CollectiveException e) {
                    // Each survivor agrees with its own flags: the AND is what they all share.
                    Agreement agreed = c.agree(~(1L << (8 + r)));
                    Communicator s = c.shrink();
                    return List.of(e, agreed, s);
                }
            });
            long and = -1L;
            for (int r = 0; r < n; r++) {
                if (r != lost) {
                    and &= ~(1L << (8 + r));
                }
            }
            for (int r = 0; r < n; r++) {
                if (r == lost) {
                    assertNull(outcome.get(r));
                    continue;
                }
                List<?> o = (List<?>) outcome.get(r);
                assertTrue(o.get(0) instanceof PeerFailedException, "rank " + r + " failed with " + o.get(0));
                assertEquals(new Agreement(and, List.of(lost)), o.get(1), "rank " + r);
                Communicator s = (Communicator) o.get(2);
                shrunk.add(s);
                assertEquals(n - 1, s.size());
                assertEquals(r < lost ? r : r - 1, s.rank(), "dense ranks in the old order");
            }
            RankThreads.run(shrunk, c -> {
                for (long count : new long[] {0, 1, 3, 4099, 1 << 16}) {
                    checkAllReduce(c, count);
                }
                // The shrunk communicator is an ordinary one: agree and split work on it too.
                assertEquals(new Agreement(7, List.of()), c.agree(7));
                Communicator half = c.split(c.rank() % 2, 0);
                checkAllReduce(half, 257);
                half.close();
            });
        } finally {
            RankThreads.closeAll(shrunk);
            RankThreads.closeAll(comms);
        }
    }

    @ParameterizedTest
    @EnumSource(value = Ranks.Transport.class, names = {"LOCAL", "SHM", "TCP"})
    void aSplitShrinksToItsOwnSurvivors(Ranks.Transport t) throws Exception {
        // Split 4 ranks into {0, 2} and {1, 3}; rank 3 goes away: {1} shrinks to one rank, {0, 2} to itself.
        int n = 4;
        List<Communicator> comms = t.open(n, TIMEOUT);
        List<Communicator> shrunk = new ArrayList<>();
        try {
            List<Communicator> halves = onEach(comms, (c, r) -> c.split(r % 2, 0));
            comms.get(3).close();
            List<Communicator> out = onEach(halves.subList(0, 3), (h, r) -> h.shrink());
            shrunk.addAll(out);
            assertEquals(List.of(2, 1, 2), out.stream().map(Communicator::size).toList());
            assertEquals(List.of(0, 0, 1), out.stream().map(Communicator::rank).toList());
            RankThreads.run(List.of(out.get(0), out.get(2)), c -> checkAllReduce(c, 1 << 12));
            checkAllReduce(out.get(1), 13);
        } finally {
            RankThreads.closeAll(shrunk);
            RankThreads.closeAll(comms);
        }
    }

    @ParameterizedTest
    @EnumSource(value = Ranks.Transport.class, names = {"LOCAL", "TCP"})
    void aRankLaterThanTheTimeoutIsLeftOut(Ranks.Transport t) throws Exception {
        int n = 3;
        List<Communicator> comms = t.open(n, Duration.ofSeconds(1));
        try {
            List<Object> out = onEach(comms, (c, r) -> {
                if (r == 2) {
                    Thread.sleep(2500);
                    return assertThrows(CollectiveException.class, () -> c.agree(1));
                }
                return c.agree(1);
            });
            assertEquals(new Agreement(1, List.of(2)), out.get(0));
            assertEquals(new Agreement(1, List.of(2)), out.get(1));
            assertTrue(((Throwable) out.get(2)).getMessage().contains("counted as failed"),
                    ((Throwable) out.get(2)).getMessage());
        } finally {
            RankThreads.closeAll(comms);
        }
    }
}
