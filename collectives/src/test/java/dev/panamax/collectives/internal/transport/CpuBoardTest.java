package dev.panamax.collectives.internal.transport;

import dev.panamax.collectives.internal.auth.MutualAuth;
import dev.panamax.collectives.internal.transport.tcp.TcpTransport;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Links of a transport without shared memory (TCP here, verbs alike) publish and read CPUs through the board
 * between ranks of one host, and not between hosts.
 */
@EnabledOnOs(OS.LINUX)
class CpuBoardTest {
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(20);

    /** Ranks 0 and 1 on host "a", rank 2 on host "b", connected over TCP by the selector. */
    private static List<TransportSelector.Connected> connectThreeRanks() {
        MemoryRendezvous board = new MemoryRendezvous(3, TIMEOUT_NANOS);
        PeerInfo[] peers = {new PeerInfo(0, 10, "a"), new PeerInfo(1, 11, "a"), new PeerInfo(2, 12, "b")};
        return RankThreads.onEachRank(3, rank -> {
            TransportSelector selector = new TransportSelector(
                    List.of(new TcpTransport(MutualAuth.of(null), "127.0.0.1", 0)));
            Rendezvous rv = board.as(rank);
            selector.prepare(rv);
            return selector.connect(rv, peers[rank], peers);
        });
    }

    private static void close(List<TransportSelector.Connected> all) {
        for (TransportSelector.Connected c : all) {
            for (Link l : c.links()) {
                if (l != null) {
                    l.close();
                }
            }
            c.close();
        }
    }

    @Test
    void ranksOfOneHostReadEachOthersCpuOverTcpAndRanksOfAnotherDoNot() {
        List<TransportSelector.Connected> all = connectThreeRanks();
        try {
            Link zeroToOne = all.get(0).links()[1];
            Link oneToZero = all.get(1).links()[0];
            assertTrue(zeroToOne.canShareCpu() && oneToZero.canShareCpu());
            assertFalse(zeroToOne.isSharedMemory(), "a CPU word does not make TCP shared memory");
            assertEquals(-1, oneToZero.peerCpu(), "nothing published yet");

            zeroToOne.shareCpu(3);
            assertEquals(3, oneToZero.peerCpu());
            assertEquals(-1, zeroToOne.peerCpu(), "each side has its own word");
            oneToZero.shareCpu(0);
            assertEquals(0, zeroToOne.peerCpu());
            zeroToOne.shareCpu(-1);
            assertEquals(-1, oneToZero.peerCpu(), "withdrawn");

            for (int r = 0; r < 2; r++) {
                Link toOtherHost = all.get(r).links()[2];
                assertFalse(toOtherHost.canShareCpu(), "rank " + r + " to rank 2 of another host");
                toOtherHost.shareCpu(1);
                assertEquals(-1, toOtherHost.peerCpu());
                assertFalse(all.get(2).links()[r].canShareCpu());
            }
            assertEquals(2, all.get(0).sessions().size(), "TCP's and the board's");
            assertEquals(1, all.get(2).sessions().size(), "rank 2 has no peer on its host: no board");
        } finally {
            close(all);
        }
    }

    @Test
    void aWordIsNotWrittenOnceTheCommunicatorReleasedIt() {
        List<TransportSelector.Connected> all = connectThreeRanks();
        Link zeroToOne = all.get(0).links()[1];
        close(all);
        assertThrows(IllegalStateException.class, () -> zeroToOne.shareCpu(1));
    }

    @Test
    void aPeerWithoutARegionLeavesThePairWithoutWordsAndTheConnectionStands() {
        MemoryRendezvous board = new MemoryRendezvous(2, TIMEOUT_NANOS);
        board.as(1).publish("cpu", "none");
        board.as(2).publish("cpu", "12:99999:64");
        PeerInfo[] peers = {new PeerInfo(0, 10, "a"), new PeerInfo(1, 11, "a"), new PeerInfo(2, 12, "a")};
        Link[] links = {null, new TestLink(1), new TestLink(2)};

        Transport.Session session = CpuBoard.connect(board.as(0), peers[0], peers, links);
        try {
            assertFalse(links[1].canShareCpu(), "rank 1 could not create its region");
            assertFalse(links[2].canShareCpu(), "rank 2's region cannot be mapped");
        } finally {
            session.close();
        }
    }
}
