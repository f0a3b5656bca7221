package dev.panamax.testing;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RankThreadsTest {
    /** As the collectives' timeout: its class name ends in TimeoutException, and it is unchecked. */
    static final class SomeTimeoutException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        SomeTimeoutException(String message) {
            super(message);
        }
    }

    @Test
    void runsEveryRankOnAThreadOfItsOwnAndReturnsTheResultsInRankOrder() {
        int n = 4;
        CountDownLatch all = new CountDownLatch(n);
        List<String> results = RankThreads.onEachRank(n, r -> {
            all.countDown();
            all.await(); // only returns when every rank runs at the same time
            return "rank " + r + " on " + Thread.currentThread().getName();
        });
        assertEquals(List.of("rank 0 on rank-0", "rank 1 on rank-1", "rank 2 on rank-2", "rank 3 on rank-3"),
                results);
    }

    @Test
    void theFirstFailureIsRethrownAsItIsNamingItsRankWithTheOthersSuppressed() {
        IllegalStateException first = new IllegalStateException("first");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> RankThreads.onEachRank(3, r -> {
            if (r == 1) {
                throw first;
            }
            if (r == 2) {
                throw new IllegalArgumentException("second");
            }
            return r;
        }));
        assertSame(first, e);
        assertEquals(2, e.getSuppressed().length);
        RankThreads.ThrownOnRank note = assertInstanceOf(RankThreads.ThrownOnRank.class, e.getSuppressed()[0]);
        assertEquals(1, note.rank());
        assertEquals("thrown on rank 1 of 3", note.getMessage());
        Throwable second = assertInstanceOf(IllegalArgumentException.class, e.getSuppressed()[1]);
        assertEquals("second", second.getMessage());
        assertEquals("thrown on rank 2 of 3", second.getSuppressed()[0].getMessage());
    }

    @Test
    void aTimeoutGivesWayToAnotherRanksRealFailure() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> RankThreads.onEachRank(3, r -> {
            if (r == 0) {
                throw new SomeTimeoutException("waited for rank 2");
            }
            if (r == 2) {
                throw new IllegalStateException("the cause");
            }
            return r;
        }));
        assertEquals("the cause", e.getMessage());
        assertTrue(RankThreads.isTimeout(new TimeoutException()));
        assertTrue(RankThreads.isTimeout(new SomeTimeoutException("x")));
        assertFalse(RankThreads.isTimeout(new IllegalStateException()));
    }

    @Test
    void aCheckedFailureIsWrappedNamingItsRank() {
        RuntimeException e = assertThrows(RuntimeException.class, () -> RankThreads.onEachRank(2, r -> {
            if (r == 1) {
                throw new IOException("disk");
            }
            return r;
        }));
        assertInstanceOf(IOException.class, e.getCause());
        assertTrue(e.getMessage().startsWith("rank 1 of 2 failed"), e.getMessage());
    }

    @Test
    void aRankPastTheWallLimitFailsTheRunAndIsInterrupted() throws InterruptedException {
        CountDownLatch interrupted = new CountDownLatch(1);
        AssertionError e = assertThrows(AssertionError.class,
                () -> RankThreads.onEachRank(2, Duration.ofMillis(200), r -> {
                    if (r == 1) {
                        try {
                            Thread.sleep(60_000);
                        } catch (InterruptedException x) {
                            interrupted.countDown();
                        }
                    }
                    return r;
                }));
        assertEquals("rank 1 of 2 did not finish within PT0.2S", e.getMessage());
        assertTrue(interrupted.await(30, TimeUnit.SECONDS), "the hung rank was not interrupted");
    }

    @Test
    void resourcesAreTheRanks() {
        List<String> names = List.of("a", "b", "c");
        assertEquals(List.of("A", "B", "C"), RankThreads.onEach(names, String::toUpperCase));
        List<String> seen = new ArrayList<>(Arrays.asList(new String[3]));
        RankThreads.run(names, s -> seen.set(names.indexOf(s), s + "!"));
        assertEquals(List.of("a!", "b!", "c!"), seen);
    }

    @Test
    void closeAllClosesEveryOneAndRethrowsTheFirstFailure() {
        List<String> closed = new ArrayList<>();
        List<AutoCloseable> resources = Arrays.asList(
                () -> closed.add("0"),
                () -> {
                    closed.add("1");
                    throw new IllegalStateException("one");
                },
                null,
                () -> {
                    closed.add("3");
                    throw new IllegalStateException("three");
                });
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> RankThreads.closeAll(resources));
        assertEquals("one", e.getMessage());
        assertEquals("three", e.getSuppressed()[0].getMessage());
        assertEquals(List.of("0", "1", "3"), closed);
    }

    @Test
    void needsARank() {
        assertThrows(IllegalArgumentException.class, () -> RankThreads.onEachRank(0, r -> r));
    }
}
