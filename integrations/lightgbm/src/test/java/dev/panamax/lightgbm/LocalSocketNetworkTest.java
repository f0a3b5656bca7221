package dev.panamax.lightgbm;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntSupplier;
import java.util.stream.IntStream;

import static dev.panamax.lightgbm.PanamaxLightGbmTest.TIMEOUT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LocalSocketNetworkTest {
    private static final int RANKS = 3;

    @Test
    void aCandidatePortIsBindableAndBelowTheEphemeralRange() throws IOException {
        int low = LocalSocketNetwork.ephemeralLow();
        if (Files.exists(LocalSocketNetwork.EPHEMERAL_RANGE)) {
            assertTrue(low >= 1024, "Linux's lowest ephemeral port: " + low);
        }
        for (int i = 0; i < 20; i++) {
            int port = LocalSocketNetwork.candidatePort();
            assertTrue(port > 0 && port < 65536, "port " + port);
            if (low > 2048) {
                assertTrue(port >= 1024 && port < low, port + " is below the ephemeral range from " + low);
            }
            try (ServerSocket taken = new ServerSocket()) {
                taken.bind(new InetSocketAddress(port));
                assertFalse(LocalSocketNetwork.bindable(port), "a bound port is not bindable");
            }
            assertTrue(LocalSocketNetwork.bindable(port), "free again: " + port);
        }
    }

    @Test
    void theRanksChooseAgainUntilTheirPortsDiffer() {
        int same = LocalSocketNetwork.candidatePort();
        List<Communicator> comms = Panamax.local(RANKS, TIMEOUT.toNanos());
        try {
            List<int[]> chosen = RankThreads.onEach(comms, comm -> {
                AtomicInteger calls = new AtomicInteger();
                IntSupplier candidates = () -> calls.incrementAndGet() == 1 ? same
                        : LocalSocketNetwork.candidatePort();
                int[] ports = LocalSocketNetwork.agreePorts(comm, candidates);
                // Two rounds, or more in the unlikely case that random ports meet again.
                assertTrue(calls.get() >= 2, "another round after equal ports: " + calls.get());
                return ports;
            });
            int[] ports = chosen.getFirst();
            assertEquals(RANKS, Arrays.stream(ports).distinct().count(), Arrays.toString(ports));
            for (int[] p : chosen) {
                assertEquals(Arrays.toString(ports), Arrays.toString(p), "every rank agrees");
            }
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @Test
    void portsThatStayEqualFailOnEveryRank() {
        List<Communicator> comms = Panamax.local(RANKS, TIMEOUT.toNanos());
        try {
            List<String> messages = RankThreads.onEach(comms, comm -> assertThrows(IllegalStateException.class,
                    () -> LocalSocketNetwork.agreePorts(comm, () -> 5000)).getMessage());
            for (String m : messages) {
                assertTrue(m.contains("still chose equal ports: [5000, 5000, 5000]"), m);
            }
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @ParameterizedTest(name = "the port of rank {0} taken")
    @ValueSource(ints = {0, 1, 2})
    void aRankWhosePortIsTakenFailsTheStartOnEveryRank(int failing) throws IOException {
        // A listener of someone else's on the failing rank's port: LightGBM cannot bind it. The lower ranks'
        // connections land in its backlog; the higher ranks wait for the failing rank's connection.
        int[] ports = distinctPorts(RANKS);
        List<Communicator> comms = Panamax.local(RANKS, TIMEOUT.toNanos());
        try (ServerSocket taken = new ServerSocket()) {
            taken.setReuseAddress(false);
            taken.bind(new InetSocketAddress(ports[failing]), RANKS);
            List<RuntimeException> thrown = RankThreads.onEach(comms, comm -> {
                try (CommunicatorNetwork panamax = new CommunicatorNetwork(comm)) {
                    return assertThrows(RuntimeException.class, () -> {
                        try (NetworkSession started = LocalSocketNetwork.start(comm, panamax, ports)) {
                            assertNotNull(started);
                        }
                    });
                }
            });
            LightGbmException own = assertInstanceOf(LightGbmException.class, thrown.get(failing));
            assertEquals("LGBM_NetworkInit", own.call());
            assertTrue(own.getMessage().contains("Binding port " + ports[failing] + " failed"), own.getMessage());
            for (int r = 0; r < RANKS; r++) {
                if (r != failing) {
                    CollectiveException e = assertInstanceOf(CollectiveException.class, thrown.get(r), "rank " + r);
                    assertTrue(e.getMessage().contains("rank " + failing), "rank " + r + ": " + e.getMessage());
                }
            }
        } finally {
            RankThreads.closeAll(comms);
        }
        // Nothing of the failed start is left behind: a new network starts over a new communicator.
        List<Communicator> again = Panamax.local(RANKS, TIMEOUT.toNanos());
        try {
            RankThreads.run(again, comm -> {
                try (CommunicatorNetwork panamax = new CommunicatorNetwork(comm);
                        NetworkSession started = LocalSocketNetwork.start(comm, panamax)) {
                    assertEquals(-1, started.rank());
                }
            });
        } finally {
            RankThreads.closeAll(again);
        }
    }

    @Test
    void theMachineListNamesEveryRankOnTheLoopbackAddress() {
        assertEquals("127.0.0.1:2001,127.0.0.1:2002", LocalSocketNetwork.machineList(new int[] {2001, 2002}));
    }

    /** {@code n} different ports, each as the library chooses them (below the ephemeral range, free). */
    static int[] distinctPorts(int n) {
        return IntStream.generate(LocalSocketNetwork::candidatePort).distinct().limit(n).toArray();
    }
}
