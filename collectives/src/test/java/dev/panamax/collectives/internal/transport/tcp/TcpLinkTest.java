package dev.panamax.collectives.internal.transport.tcp;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.internal.auth.MutualAuth;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.MemoryRendezvous;
import dev.panamax.collectives.internal.transport.PeerInfo;
import dev.panamax.collectives.internal.transport.Rendezvous;
import dev.panamax.collectives.internal.transport.Request;
import dev.panamax.collectives.internal.transport.Transport;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The TCP link between two ranks over its shared socket and its one-way sockets: how a message is split, that
 * small, one-way and split messages arrive whole (copied and reduced) in FIFO order, that a pair agrees on the
 * smaller number of sockets, that lengths that differ are named whichever sockets they were meant for, and that a
 * closed or blaming peer ends a receive over several sockets with its error.
 */
class TcpLinkTest {
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(20);
    /**
     * Sizes around the split points: shared, one-way from 128 KiB, whole, 2 parts, 4 parts with an uneven tail,
     * more bytes than parts of 4 KiB.
     */
    private static final long[] BYTES = {0, 4, 4096, 131_068, 131_072, 262_144, 524_284, 524_288, 786_436,
        (1 << 20) + 12, (4 << 20) + 4};

    @AfterEach
    void clear() {
        System.clearProperty("panamax.tcp.dataConnections");
    }

    @Test
    void partsCoverTheMessageInAlignedPiecesOfAtLeastThePartSizeButTheLast() {
        for (int sockets = 1; sockets <= 16; sockets++) {
            for (long bytes = 0; bytes < (9L << 20); bytes += bytes < 1_200_000 ? 4 * 1021 : 65_536 + 8) {
                int parts = TcpLink.parts(bytes, sockets);
                assertTrue(parts >= 1 && parts <= sockets, () -> "parts " + parts);
                assertEquals(Math.max(1, Math.min(sockets, bytes / TcpLink.STRIPE_PART_BYTES)), parts);
                assertEquals(0, TcpLink.partStart(bytes, parts, 0));
                assertEquals(bytes, TcpLink.partStart(bytes, parts, parts));
                for (int j = 0; j < parts; j++) {
                    long start = TcpLink.partStart(bytes, parts, j);
                    long end = TcpLink.partStart(bytes, parts, j + 1);
                    String where = "bytes " + bytes + " sockets " + sockets + " part " + j;
                    assertEquals(0, start % 4096, where);
                    assertTrue(end > start || bytes == 0, where);
                    // Only the last part may be shorter than STRIPE_PART_BYTES, by the rounding of the others.
                    assertTrue(parts == 1 || j == parts - 1 || end - start >= TcpLink.STRIPE_PART_BYTES, where);
                }
            }
        }
    }

    @ParameterizedTest(name = "{0} and {1} one-way sockets per direction wanted: {2} used")
    @CsvSource({"0, 0, 0", "1, 1, 1", "4, 4, 4", "2, 4, 2", "4, 0, 0", "3, 8, 3"})
    void messagesArriveWholeInOrderOverTheSocketsBothRanksWant(int wanted0, int wanted1, int used) {
        List<Link> links = connect(wanted0, wanted1);
        try {
            for (Link l : links) {
                assertEquals(1 + 2 * used, ((TcpLink) l).sockets());
                assertEquals(used > 0, ((TcpLink) l).goesOneWay(TcpLink.ONE_WAY_MIN_BYTES));
                assertEquals(false, ((TcpLink) l).goesOneWay(TcpLink.ONE_WAY_MIN_BYTES - 1));
            }
            RankThreads.run(links, link -> {
                int rank = 1 - link.peer();
                try (Arena arena = Arena.ofConfined()) {
                    List<Request> requests = new ArrayList<>();
                    List<MemorySegment> copies = new ArrayList<>();
                    List<MemorySegment> sums = new ArrayList<>();
                    for (long bytes : BYTES) {
                        MemorySegment out = fill(arena.allocate(bytes + 4, 64).asSlice(0, bytes), rank);
                        requests.add(link.send(out));
                        requests.add(link.send(out));
                        MemorySegment copy = arena.allocate(bytes + 4, 64).asSlice(0, bytes);
                        MemorySegment sum = fill(arena.allocate(bytes + 4, 64).asSlice(0, bytes), rank);
                        requests.add(link.recv(copy, null, DataType.FLOAT32, null));
                        requests.add(link.recv(sum, sum, DataType.FLOAT32, ReduceOp.SUM));
                        copies.add(copy);
                        sums.add(sum);
                    }
                    waitAll(requests);
                    for (int m = 0; m < BYTES.length; m++) {
                        for (long i = 0; i < BYTES[m] / 4; i++) {
                            float got = copies.get(m).getAtIndex(ValueLayout.JAVA_FLOAT, i);
                            float sum = sums.get(m).getAtIndex(ValueLayout.JAVA_FLOAT, i);
                            if (got != value(1 - rank, i) || sum != value(0, i) + value(1, i)) {
                                throw new AssertionError("rank " + rank + " message of " + BYTES[m] + " bytes, element "
                                        + i + ": copied " + got + ", summed " + sum);
                            }
                        }
                    }
                }
            });
        } finally {
            RankThreads.closeAll(links);
        }
    }

    @Test
    void theNumberOfOneWaySocketsIsASetting() {
        System.setProperty("panamax.tcp.dataConnections", "8");
        assertEquals(8, TcpTransport.dataConnectionsFromSettings());
        System.setProperty("panamax.tcp.dataConnections", "0");
        assertEquals(0, TcpTransport.dataConnectionsFromSettings());
        System.clearProperty("panamax.tcp.dataConnections");
        assertEquals(1, TcpTransport.dataConnectionsFromSettings());
    }

    @ParameterizedTest
    @ValueSource(strings = {"-1", "9", "two"})
    void aBadNumberOfSocketsFailsNamingTheSetting(String value) {
        System.setProperty("panamax.tcp.dataConnections", value);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                TcpTransport::dataConnectionsFromSettings);
        assertTrue(e.getMessage().contains("PANAMAX_TCP_DATA_CONNECTIONS")
                && e.getMessage().contains("'" + value + "'"), e::getMessage);
    }

    @Test
    void anEvenNumberOfSocketsIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new TcpLink(0, 1, new SocketChannel[2]));
        assertTrue(e.getMessage().contains("an odd number in all, not 2"), e::getMessage);
    }

    /** Lengths on both sides of the one-way size, and both over it (then split over 4 sockets each way). */
    @ParameterizedTest(name = "sent {0}, expected {1}")
    @CsvSource({"524288, 262144", "524288, 8", "8, 524288", "131072, 131068"})
    void mismatchedLengthsFailNamingBoth(long sent, long expected) {
        List<Link> links = connect(4, 4);
        try (Arena arena = Arena.ofShared()) {
            Request send = links.get(1).send(arena.allocate(sent));
            Request recv = links.get(0).recv(arena.allocate(expected), null, DataType.FLOAT32, null);
            long deadline = System.nanoTime() + TIMEOUT_NANOS;
            CollectiveException e = assertThrows(CollectiveException.class, () -> {
                while (!recv.poll() && System.nanoTime() - deadline < 0) {
                    send.poll();
                }
            });
            assertTrue(e.getMessage().contains("sent " + sent + " bytes but rank 0 expected " + expected),
                    e::getMessage);
        } finally {
            RankThreads.closeAll(links);
        }
    }

    @Test
    void aPeerThatClosesEndsAStripedReceive() {
        List<Link> links = connect(4, 4);
        try (Arena arena = Arena.ofShared()) {
            Request recv = links.get(0).recv(arena.allocate(1 << 20), null, DataType.FLOAT32, null);
            recv.poll();
            links.get(1).close();
            PeerFailedException e = assertThrows(PeerFailedException.class, () -> waitAll(List.of(recv)));
            assertEquals(1, e.peer());
        } finally {
            RankThreads.closeAll(links);
        }
    }

    @Test
    void aPeerThatGivesUpPassesOnTheRankThatFailed() {
        List<Link> links = connect(4, 4);
        try (Arena arena = Arena.ofShared()) {
            Request recv = links.get(0).recv(arena.allocate(1 << 20), null, DataType.FLOAT32, null);
            recv.poll();
            links.get(1).closeBlaming(5);
            PeerFailedException e = assertThrows(PeerFailedException.class, () -> waitAll(List.of(recv)));
            assertEquals(5, e.peer(), e::getMessage);
        } finally {
            RankThreads.closeAll(links);
        }
    }

    private static float value(int rank, long i) {
        return (rank + 1) * 1000 + i % 977;
    }

    private static MemorySegment fill(MemorySegment s, int rank) {
        for (long i = 0; i < s.byteSize() / 4; i++) {
            s.setAtIndex(ValueLayout.JAVA_FLOAT, i, value(rank, i));
        }
        return s;
    }

    private static void waitAll(List<Request> requests) {
        long deadline = System.nanoTime() + TIMEOUT_NANOS;
        for (Request r : requests) {
            while (!r.poll()) {
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError("timed out in " + r.describe());
                }
                Thread.onSpinWait();
            }
        }
    }

    /** Rank 0's link to rank 1 and rank 1's link to rank 0, each rank wanting {@code wanted0}, {@code wanted1}. */
    private static List<Link> connect(int wanted0, int wanted1) {
        MemoryRendezvous board = new MemoryRendezvous(2, TIMEOUT_NANOS);
        return RankThreads.onEachRank(2, rank -> {
            Transport t = new TcpTransport(MutualAuth.of(null), "127.0.0.1", rank == 0 ? wanted0 : wanted1);
            Rendezvous rv = board.as(rank);
            t.prepare(rv);
            Link[] links = new Link[2];
            try {
                t.connect(rv, new PeerInfo[]{new PeerInfo(1 - rank, 0, "here")}, links);
            } finally {
                t.release();
            }
            return links[1 - rank];
        });
    }
}
