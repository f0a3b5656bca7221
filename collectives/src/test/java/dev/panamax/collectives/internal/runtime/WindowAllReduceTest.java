package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.SharedWindow;
import dev.panamax.collectives.internal.transport.TestLink;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.concurrent.AdaptiveBackoffIdleStrategy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * One rank's side of the window all-reduce, on one thread: the other ranks' windows are plain memory this test
 * publishes into, so every fold, check and wait is exercised without threads or processes (the shared-memory suites
 * run it between real ranks).
 */
class WindowAllReduceTest {
    private static final long TIMEOUT_NANOS = 10_000_000_000L;
    private final Arena arena = Arena.ofConfined();

    @AfterEach
    void close() {
        arena.close();
    }

    /** A link whose windows are given memory; it moves no messages. */
    private static final class WindowLink extends TestLink {
        private final MemorySegment own;
        private final MemorySegment peerWindow;
        int wakes;
        /** What {@link #wakePeer} answers: whether the peer was asleep. */
        boolean peerAsleep;
        /**
         * The peer's call 1, published by the first progress {@link #arrivesAfterNanos} or more after the first
         * progress of the wait for it (its first poll); null when none.
         */
        MemorySegment lateInput;
        long arrivesAfterNanos;
        long firstProgressNanos;
        /** How long after that first poll the peer's call was published. */
        long publishedAfterNanos;

        WindowLink(int peer, MemorySegment own, MemorySegment peerWindow) {
            super(peer);
            this.own = own;
            this.peerWindow = peerWindow;
        }

        @Override
        public MemorySegment ownWindow() {
            return own;
        }

        @Override
        public MemorySegment peerWindow() {
            return peerWindow;
        }

        @Override
        public boolean wakePeer() {
            wakes++;
            return peerAsleep;
        }

        @Override
        protected void doProgress() {
            if (lateInput == null) {
                return;
            }
            long now = System.nanoTime();
            if (firstProgressNanos == 0) {
                firstProgressNanos = now;
            } else if (now - firstProgressNanos >= arrivesAfterNanos) {
                publish(peerWindow, 1, lateInput, DataType.FLOAT32, ReduceOp.SUM, false, 0);
                lateInput = null;
                publishedAfterNanos = now - firstProgressNanos;
            }
        }
    }

    /** n window regions, with the capacities given (by rank). */
    private MemorySegment[] regions(long... capacities) {
        MemorySegment[] r = new MemorySegment[capacities.length];
        for (int q = 0; q < r.length; q++) {
            r[q] = arena.allocate(SharedWindow.BYTES, 64);
            SharedWindow.initialize(r[q], capacities[q]);
        }
        return r;
    }

    /** Rank {@code rank}'s links over {@code regions}. */
    private static Link[] linksOf(int rank, MemorySegment[] regions) {
        Link[] links = new Link[regions.length];
        for (int q = 0; q < regions.length; q++) {
            if (q != rank) {
                links[q] = new WindowLink(q, regions[rank], regions[q]);
            }
        }
        return links;
    }

    private static ProgressLoop loop(long timeoutNanos) {
        return new ProgressLoop(0, timeoutNanos, false);
    }

    /** Float32 inputs whose sum rounds differently in another order: the fold must go by rank. */
    private static final float[][] FLOATS = {{1e8f, 3f}, {1f, -7f}, {-1e8f, 0.5f}, {1f, 1e-3f}};

    private MemorySegment floats(float... v) {
        MemorySegment s = arena.allocate(4L * v.length, 64);
        MemorySegment.copy(v, 0, s, ValueLayout.JAVA_FLOAT, 0, v.length);
        return s;
    }

    private static float[] floatsOf(MemorySegment s, int n) {
        float[] out = new float[n];
        MemorySegment.copy(s, ValueLayout.JAVA_FLOAT, 0, out, 0, n);
        return out;
    }

    /** Publishes rank q's call {@code call} into its window as that rank would. */
    private static void publish(MemorySegment region, long call, MemorySegment data, DataType type, ReduceOp op,
            boolean preMultiplied, double scalar) {
        new SharedWindow(region).publish(call, data, data.byteSize(), WindowAllReduce.code(type, op, preMultiplied),
                scalar);
    }

    @Test
    void foldsEveryRanksInputInRankOrder() {
        MemorySegment[] regions = regions(1024, 1024, 1024, 1024);
        WindowAllReduce w = WindowAllReduce.over(0, linksOf(0, regions), 1);
        assertNotNull(w);
        for (int q = 1; q < 4; q++) {
            publish(regions[q], 1, floats(FLOATS[q]), DataType.FLOAT32, ReduceOp.SUM, false, 0);
        }
        MemorySegment recv = arena.allocate(8, 64);
        w.run(loop(TIMEOUT_NANOS), floats(FLOATS[0]), recv, 2, DataType.FLOAT32, ReduceOp.SUM, false, 0);
        float[] want = new float[2];
        for (int i = 0; i < 2; i++) {
            float acc = FLOATS[0][i] + FLOATS[1][i];
            for (int q = 2; q < 4; q++) {
                acc += FLOATS[q][i];
            }
            want[i] = acc;
        }
        assertEquals(1f, want[0], "the inputs were chosen so that rank order matters");
        assertEquals(want[0], floatsOf(recv, 2)[0]);
        assertEquals(want[1], floatsOf(recv, 2)[1]);
    }

    @ParameterizedTest
    @EnumSource(value = ReduceOp.class, names = {"SUM", "PROD", "MIN", "MAX", "AVG"})
    void everyOperationOfInt32AndFloat64(ReduceOp op) {
        long[][] ints = {{5, -3, 7}, {2, 9, -1}, {-4, 6, 8}};
        double[][] doubles = {{0.5, -3, 7.25}, {2, 9.5, -1}, {-4, 6, 1e-3}};
        for (DataType type : new DataType[] {DataType.INT32, DataType.FLOAT64}) {
            MemorySegment[] regions = regions(1024, 1024, 1024);
            WindowAllReduce w = WindowAllReduce.over(0, linksOf(0, regions), 1);
            MemorySegment[] in = new MemorySegment[3];
            for (int q = 0; q < 3; q++) {
                in[q] = arena.allocate(type.byteSize() * 3L, 64);
                for (int i = 0; i < 3; i++) {
                    if (type == DataType.INT32) {
                        in[q].setAtIndex(ValueLayout.JAVA_INT, i, (int) ints[q][i]);
                    } else {
                        in[q].setAtIndex(ValueLayout.JAVA_DOUBLE, i, doubles[q][i]);
                    }
                }
            }
            for (int q = 1; q < 3; q++) {
                publish(regions[q], 1, in[q], type, op, false, 0);
            }
            MemorySegment recv = arena.allocate(type.byteSize() * 3L, 64);
            w.run(loop(TIMEOUT_NANOS), in[0], recv, 3, type, op, false, 0);
            for (int i = 0; i < 3; i++) {
                if (type == DataType.INT32) {
                    long acc = ints[0][i];
                    for (int q = 1; q < 3; q++) {
                        acc = switch (op) {
                            case SUM, AVG -> acc + ints[q][i];
                            case PROD -> acc * ints[q][i];
                            case MIN -> Math.min(acc, ints[q][i]);
                            default -> Math.max(acc, ints[q][i]);
                        };
                    }
                    if (op == ReduceOp.AVG) {
                        acc /= 3;
                    }
                    assertEquals((int) acc, recv.getAtIndex(ValueLayout.JAVA_INT, i), type + " " + op + " [" + i + "]");
                } else {
                    double acc = op == ReduceOp.AVG ? doubles[0][i] * (1.0 / 3) + doubles[1][i] * (1.0 / 3)
                            : doubles[0][i];
                    for (int q = op == ReduceOp.AVG ? 2 : 1; q < 3; q++) {
                        acc = switch (op) {
                            case SUM -> acc + doubles[q][i];
                            case AVG -> acc + doubles[q][i] * (1.0 / 3);
                            case PROD -> acc * doubles[q][i];
                            case MIN -> Math.min(acc, doubles[q][i]);
                            default -> Math.max(acc, doubles[q][i]);
                        };
                    }
                    assertEquals(acc, recv.getAtIndex(ValueLayout.JAVA_DOUBLE, i), type + " " + op + " [" + i + "]");
                }
            }
        }
    }

    @Test
    void aPreMultipliedSumScalesEachInputByItsOwnRanksScalar() {
        MemorySegment[] regions = regions(1024, 1024, 1024);
        WindowAllReduce w = WindowAllReduce.over(1, linksOf(1, regions), 1);
        double[] scalars = {0.5, -2, 4};
        float[][] in = {{1, 2}, {3, 4}, {5, 6}};
        publish(regions[0], 1, floats(in[0]), DataType.FLOAT32, ReduceOp.SUM, true, scalars[0]);
        publish(regions[2], 1, floats(in[2]), DataType.FLOAT32, ReduceOp.SUM, true, scalars[2]);
        MemorySegment recv = arena.allocate(8, 64);
        w.run(loop(TIMEOUT_NANOS), floats(in[1]), recv, 2, DataType.FLOAT32, ReduceOp.SUM, true, scalars[1]);
        for (int i = 0; i < 2; i++) {
            float acc = (float) (in[0][i] * scalars[0]) + (float) (in[1][i] * scalars[1]);
            acc += (float) (in[2][i] * scalars[2]);
            assertEquals(acc, floatsOf(recv, 2)[i]);
        }
    }

    @Test
    void aRankAlreadyAtTheNextCallLeavesThisCallsInputInPlace() {
        MemorySegment[] regions = regions(1024, 1024);
        WindowAllReduce w = WindowAllReduce.over(0, linksOf(0, regions), 1);
        // Rank 1 finished call 1 (it saw rank 0's input) and published call 2 before rank 0 read its call 1.
        publish(regions[1], 1, floats(10, 20), DataType.FLOAT32, ReduceOp.SUM, false, 0);
        publish(regions[1], 2, floats(100, 200), DataType.FLOAT32, ReduceOp.SUM, false, 0);
        MemorySegment recv = arena.allocate(8, 64);
        w.run(loop(TIMEOUT_NANOS), floats(1, 2), recv, 2, DataType.FLOAT32, ReduceOp.SUM, false, 0);
        assertEquals(11f, floatsOf(recv, 2)[0]);
        assertEquals(22f, floatsOf(recv, 2)[1]);
        // In place: the input is copied into the window before the result overwrites it.
        MemorySegment buffer = floats(3, 4);
        w.run(loop(TIMEOUT_NANOS), buffer, buffer, 2, DataType.FLOAT32, ReduceOp.SUM, false, 0);
        assertEquals(103f, floatsOf(buffer, 2)[0]);
        assertEquals(204f, floatsOf(buffer, 2)[1]);
    }

    @Test
    void inPlaceEveryRankFoldsTheSameInputs() {
        // Rank 2 of 3 folds ranks 0 and 1 into its buffer before its own input's turn: it must read its window copy.
        for (int rank = 0; rank < 3; rank++) {
            MemorySegment[] regions = regions(1024, 1024, 1024);
            WindowAllReduce w = WindowAllReduce.over(rank, linksOf(rank, regions), 1);
            for (int q = 0; q < 3; q++) {
                if (q != rank) {
                    publish(regions[q], 1, floats(FLOATS[q]), DataType.FLOAT32, ReduceOp.SUM, false, 0);
                }
            }
            MemorySegment buffer = floats(FLOATS[rank]);
            w.run(loop(TIMEOUT_NANOS), buffer, buffer, 2, DataType.FLOAT32, ReduceOp.SUM, false, 0);
            for (int i = 0; i < 2; i++) {
                assertEquals(FLOATS[0][i] + FLOATS[1][i] + FLOATS[2][i], floatsOf(buffer, 2)[i], "rank " + rank);
            }
        }
    }

    @Test
    void publishingWakesEveryPeer() {
        MemorySegment[] regions = regions(1024, 1024, 1024);
        Link[] links = linksOf(0, regions);
        WindowAllReduce w = WindowAllReduce.over(0, links, 1);
        publish(regions[1], 1, floats(1), DataType.FLOAT32, ReduceOp.SUM, false, 0);
        publish(regions[2], 1, floats(1), DataType.FLOAT32, ReduceOp.SUM, false, 0);
        w.run(loop(TIMEOUT_NANOS), floats(1), arena.allocate(4, 64), 1, DataType.FLOAT32, ReduceOp.SUM, false, 0);
        assertEquals(1, ((WindowLink) links[1]).wakes);
        assertEquals(1, ((WindowLink) links[2]).wakes);
    }

    @Test
    void theCapacityIsTheSmallestOfTheRanksWindows() {
        MemorySegment[] regions = regions(1024, 256, 4096);
        for (int rank = 0; rank < 3; rank++) {
            WindowAllReduce w = WindowAllReduce.over(rank, linksOf(rank, regions), 1);
            assertEquals(256, w.capacityBytes(), "rank " + rank);
            assertTrue(w.fits(64, DataType.FLOAT32));
            assertFalse(w.fits(65, DataType.FLOAT32));
            assertFalse(w.fits(0, DataType.FLOAT32), "an empty all-reduce moves nothing: no window");
        }
    }

    @Test
    void noWindowWithoutOneOnEveryLinkOrWithoutCapacity() {
        assertNull(WindowAllReduce.over(0, new Link[1], 1), "a single rank");
        assertNull(WindowAllReduce.over(0, linksOf(0, regions(1024, 0, 1024)), 1), "a rank that carries nothing");
        Link[] missing = linksOf(0, regions(1024, 1024, 1024));
        missing[2] = null;
        assertNull(WindowAllReduce.over(0, missing, 1), "a peer without a link");
        MemorySegment[] r = regions(1024, 1024, 1024, 1024);
        Link[] mixed = linksOf(0, r);
        mixed[3] = new WindowLink(3, r[1], r[3]);
        assertNull(WindowAllReduce.over(0, mixed, 1), "links of two different own windows");
        Link[] plain = linksOf(0, regions(1024, 1024));
        plain[1] = new WindowLink(1, null, null);
        assertNull(WindowAllReduce.over(0, plain, 1), "a transport without windows");
    }

    @Test
    void aRankThatCalledSomethingElseFailsTheCallNamingBothCalls() {
        MemorySegment[] regions = regions(1024, 1024, 1024);
        WindowAllReduce w = WindowAllReduce.over(0, linksOf(0, regions), 1);
        publish(regions[1], 1, floats(1, 2), DataType.FLOAT32, ReduceOp.SUM, false, 0);
        publish(regions[2], 1, floats(1, 2, 3), DataType.FLOAT32, ReduceOp.SUM, false, 0);
        CollectiveException e = assertThrows(CollectiveException.class, () -> w.run(loop(TIMEOUT_NANOS),
                floats(1, 2), arena.allocate(8, 64), 2, DataType.FLOAT32, ReduceOp.SUM, false, 0));
        assertTrue(e.getMessage().contains("rank 2 called an all-reduce of 12 bytes of float32 (sum) but rank 0 "
                + "called an all-reduce of 8 bytes of float32 (sum)"), e.getMessage());

        MemorySegment[] other = regions(1024, 1024);
        WindowAllReduce v = WindowAllReduce.over(0, linksOf(0, other), 1);
        publish(other[1], 1, floats(1, 2), DataType.FLOAT32, ReduceOp.MAX, false, 0);
        e = assertThrows(CollectiveException.class, () -> v.run(loop(TIMEOUT_NANOS), floats(1, 2),
                arena.allocate(8, 64), 2, DataType.FLOAT32, ReduceOp.SUM, false, 0));
        assertTrue(e.getMessage().contains("(max) but rank 0 called an all-reduce of 8 bytes of float32 (sum)"),
                e.getMessage());
    }

    @Test
    void aPeerThatNeverPublishesTimesOutNamingIt() {
        MemorySegment[] regions = regions(1024, 1024, 1024);
        WindowAllReduce w = WindowAllReduce.over(0, linksOf(0, regions), 1);
        publish(regions[1], 1, floats(1), DataType.FLOAT32, ReduceOp.SUM, false, 0);
        CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class, () -> w.run(
                loop(100_000_000L), floats(1), arena.allocate(4, 64), 1, DataType.FLOAT32, ReduceOp.SUM, false, 0));
        assertTrue(e.getMessage().contains("window all-reduce call 1 of rank 2 over test (its window shows call 0)"),
                e.getMessage());
        assertFalse(e.getMessage().contains("of rank 1"), e.getMessage());
    }

    @Test
    void aCallThatWokeASleepingPeerSpinsWhileThePeerWakesWhereItWouldYield() {
        long arrivesAfter = 3 * AdaptiveBackoffIdleStrategy.SPIN_NANOS; // past the spin, within the spin after a wake
        long[] woke = null;
        for (int attempt = 0; attempt < 5 && (woke == null
                || woke[1] >= AdaptiveBackoffIdleStrategy.WOKEN_PEER_SPIN_NANOS); attempt++) {
            woke = yieldsAndLengthOfAWaitForALatePeer(true, arrivesAfter);
        }
        assumeTrue(woke[1] < AdaptiveBackoffIdleStrategy.WOKEN_PEER_SPIN_NANOS,
                "the test thread lost its CPU: each wait outlasted the spin after a wake (" + woke[1] + " ns)");
        assertEquals(0, woke[0], "the ring woke the peer: no yield while it wakes");
        // A thread that loses its CPU during the spin finds the peer arrived when it comes back, without a yield:
        // one of a few waits must yield.
        long[] didNotWake = null;
        for (int attempt = 0; attempt < 5 && (didNotWake == null || didNotWake[0] == 0); attempt++) {
            didNotWake = yieldsAndLengthOfAWaitForALatePeer(false, arrivesAfter);
        }
        assertTrue(didNotWake[0] > 0, "no sleeper woken: the wait yields after its spin");
    }

    /**
     * Rank 0's call with rank 1, which publishes {@code arrivesAfterNanos} into rank 0's wait: the wait's yields, and
     * how long after its first poll the peer published.
     */
    private long[] yieldsAndLengthOfAWaitForALatePeer(boolean peerAsleep, long arrivesAfterNanos) {
        MemorySegment[] regions = regions(64, 64);
        Link[] links = linksOf(0, regions);
        WindowLink toRank1 = (WindowLink) links[1];
        toRank1.peerAsleep = peerAsleep;
        toRank1.lateInput = floats(2f);
        toRank1.arrivesAfterNanos = arrivesAfterNanos;
        WindowAllReduce w = WindowAllReduce.over(0, links, 1);
        ProgressLoop loop = loop(TIMEOUT_NANOS);
        MemorySegment recv = arena.allocate(4, 64);
        w.run(loop, floats(1f), recv, 1, DataType.FLOAT32, ReduceOp.SUM, false, 0);
        assertEquals(3f, floatsOf(recv, 1)[0]);
        assertEquals(1, toRank1.wakes);
        return new long[] {loop.waits().yields(), toRank1.publishedAfterNanos};
    }
}
