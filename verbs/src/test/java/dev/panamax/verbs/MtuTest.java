package dev.panamax.verbs;

import dev.panamax.bindings.verbs.verbs_h;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class MtuTest {

    @Test
    void bytesAndIbvMtuValuesBothMapToEnumIbvMtu() {
        assertEquals(verbs_h.IBV_MTU_256(), Mtu.toIbv(256));
        assertEquals(verbs_h.IBV_MTU_1024(), Mtu.toIbv(1024));
        assertEquals(verbs_h.IBV_MTU_4096(), Mtu.toIbv(4096));
        assertEquals(verbs_h.IBV_MTU_1024(), Mtu.toIbv(verbs_h.IBV_MTU_1024()));
        for (int v = 1; v <= 5; v++) {
            assertEquals(v, Mtu.toIbv(Mtu.bytes(v)));
        }
        assertEquals(1024, Mtu.bytes(verbs_h.IBV_MTU_1024()));
        assertThrows(IllegalArgumentException.class, () -> Mtu.toIbv(1500));
        assertThrows(IllegalArgumentException.class, () -> Mtu.toIbv(0));
        assertThrows(IllegalArgumentException.class, () -> Mtu.bytes(6));
    }

    @Test
    void portInfoReportsTheActiveMtuInBytes() {
        PortInfo p = new PortInfo(PortInfo.STATE_ACTIVE, 3, 5, 0, PortInfo.LINK_LAYER_ETHERNET, 16);
        assertEquals(1024, p.activeMtuBytes());
        assertEquals(true, p.isActive());
        assertEquals(true, p.isEthernet());
        assertEquals(false, new PortInfo(1, 3, 5, 0, 1, 16).isActive());
    }
}
