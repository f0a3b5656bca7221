package dev.panamax.verbs;

import dev.panamax.testing.RdmaTest;
import org.junit.jupiter.api.Test;

import java.util.List;

import static dev.panamax.verbs.RdmaTestDevice.PORT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@RdmaTest
class VerbsDeviceTest {

    @Test
    void listsAndOpensDevicesByName() {
        try (VerbsContext first = RdmaTestDevice.openDevice()) {
            List<RdmaDevice> devices = Verbs.devices();
            System.out.println("verbs devices: " + devices);
            assertFalse(devices.isEmpty());
            for (RdmaDevice d : devices) {
                assertFalse(d.name().isEmpty());
                assertFalse(d.transport().isEmpty());
            }
            try (VerbsContext byName = Verbs.open(first.deviceName())) {
                assertEquals(first.deviceName(), byName.deviceName());
            }
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Verbs.open("no-such-device"));
            assertTrue(e.getMessage().contains("no RDMA device named no-such-device; devices: ["), e.getMessage());
            assertTrue(e.getMessage().contains(devices.get(0).name()), e.getMessage());
        }
    }

    @Test
    void queriesThePortAndFindsAGidToConnectWith() {
        try (VerbsContext context = RdmaTestDevice.openDevice()) {
            PortInfo port = context.queryPort(PORT);
            System.out.println(context.deviceName() + " port " + PORT + ": " + port);
            assertTrue(port.isActive());
            assertTrue(port.activeMtu() >= 1 && port.activeMtu() <= port.maxMtu() && port.maxMtu() <= 5,
                    port::toString);
            assertTrue(port.gidTableLength() > 0);
            int gidIndex = context.findRoceV2GidIndex(PORT);
            if (port.isEthernet()) {
                assertTrue(gidIndex >= 0, "a RoCE port has a GID");
            }
            if (gidIndex >= 0) {
                byte[] gid = context.queryGid(PORT, gidIndex);
                System.out.println("GID index " + gidIndex + ": " + Gids.format(gid));
                assertFalse(Gids.isZero(gid));
                assertArrayEquals(gid, context.queryGid(PORT, gidIndex));
            }
            assertThrows(IllegalArgumentException.class, () -> context.queryPort(0));
            assertThrows(VerbsException.class, () -> context.queryPort(200));
        }
    }

    @Test
    void aClosedContextRefusesWorkAndClosesOnce() {
        VerbsContext context = RdmaTestDevice.openDevice();
        context.close();
        context.close();
        assertFalse(context.isOpen());
        IllegalStateException e = assertThrows(IllegalStateException.class, context::allocateProtectionDomain);
        assertTrue(e.getMessage().contains("is closed"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> context.queryPort(PORT));
        assertThrows(IllegalStateException.class, () -> context.createCompletionQueue(4));
    }
}
