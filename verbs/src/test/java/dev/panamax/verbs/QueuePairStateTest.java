package dev.panamax.verbs;

import dev.panamax.testing.RdmaTest;
import dev.panamax.verbs.RdmaTestDevice.Loopback;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;

import static dev.panamax.verbs.RdmaTestDevice.PORT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@RdmaTest
class QueuePairStateTest {

    @Test
    void walksResetInitRtrRtsAsTheDeviceReports() {
        try (Loopback l = new Loopback(); Arena arena = Arena.ofConfined()) {
            QueuePair a = l.a;
            QueuePair b = l.b;
            assertNotEquals(a.qpNumber(), b.qpNumber());
            assertEquals(QpState.RESET, a.state());
            ReceiveRequest recv = ReceiveRequest.allocate(arena).wrId(1);
            assertThrows(IllegalStateException.class, () -> a.postReceive(recv));

            a.initialize(PORT);
            assertEquals(QpState.INIT, a.state());
            a.postReceive(recv); // receives may wait in INIT

            int mtu = RdmaTestDevice.mtu(l.context);
            QpEndpoint ea = a.localEndpoint(PORT, l.gidIndex, 0x1234);
            QpEndpoint eb = b.localEndpoint(PORT, l.gidIndex, 0x5678);
            assertThrows(IllegalStateException.class, () -> a.readyToSend(ea), "RTS needs RTR");
            a.readyToReceive(eb, PORT, l.gidIndex, mtu);
            assertEquals(QpState.RTR, a.state());
            assertThrows(IllegalStateException.class, () -> a.postSend(SendRequest.allocate(arena)), "sends need RTS");
            a.readyToSend(ea);
            assertEquals(QpState.RTS, a.state());
            assertEquals(QpState.RTS, a.lastKnownState());

            b.connect(eb, ea, PORT, l.gidIndex, mtu); // all three steps at once
            assertEquals(QpState.RTS, b.state());
            assertThrows(IllegalStateException.class, () -> b.connect(eb, ea, PORT, l.gidIndex, mtu));

            a.toError();
            assertEquals(QpState.ERROR, a.state());
        }
    }

    @Test
    void theLocalEndpointCarriesTheQueuePairPortAndGid() {
        try (Loopback l = new Loopback()) {
            QpEndpoint e = l.a.localEndpoint(PORT, l.gidIndex, 0x7ABCDEF0);
            assertEquals(l.a.qpNumber(), e.qpNumber());
            assertEquals(0xBCDEF0, e.psn(), "24 bits");
            assertEquals(l.context.queryPort(PORT).lid(), e.lid());
            if (l.gidIndex >= 0) {
                assertArrayEquals(l.context.queryGid(PORT, l.gidIndex), e.gid());
                assertTrue(e.hasGid());
            }
            assertEquals(e, QpEndpoint.fromBytes(e.toBytes()));
        }
    }

    @Test
    void badConnectArgumentsAreRefusedBeforeAnythingChanges() {
        try (Loopback l = new Loopback()) {
            QpEndpoint ea = l.a.localEndpoint(PORT, l.gidIndex, 1);
            QpEndpoint eb = l.b.localEndpoint(PORT, l.gidIndex, 2);
            assertThrows(IllegalArgumentException.class, () -> l.a.connect(ea, eb, PORT, l.gidIndex, 1500));
            assertThrows(IllegalArgumentException.class, () -> l.a.connect(eb, ea, PORT, l.gidIndex, 1024),
                    "local endpoint of another queue pair");
            assertEquals(QpState.RESET, l.a.state());
        }
    }
}
