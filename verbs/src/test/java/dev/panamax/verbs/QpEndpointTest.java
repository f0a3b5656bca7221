package dev.panamax.verbs;

import org.junit.jupiter.api.Test;

import java.util.HexFormat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class QpEndpointTest {
    private static final byte[] GID = HexFormat.of().parseHex("00000000000000000000ffff0a00020f");

    @Test
    void encodesAsBigEndianFieldsThenTheGid() {
        QpEndpoint e = new QpEndpoint(0x000011, 0xabcdef, 0x1234, GID);
        byte[] bytes = e.toBytes();
        assertEquals(QpEndpoint.BYTES, bytes.length);
        assertEquals("00000011" + "00abcdef" + "00001234" + "00000000000000000000ffff0a00020f",
                HexFormat.of().formatHex(bytes));
        assertEquals(e, QpEndpoint.fromBytes(bytes));
    }

    @Test
    void roundTripsAnyValidEndpoint() {
        byte[] gid = new byte[16];
        for (int i = 0; i < 16; i++) gid[i] = (byte) (0xF0 + i);
        QpEndpoint e = new QpEndpoint(0xFF_FFFF, 0, 0xFFFF, gid);
        QpEndpoint back = QpEndpoint.fromBytes(e.toBytes());
        assertEquals(e, back);
        assertEquals(e.hashCode(), back.hashCode());
        assertArrayEquals(gid, back.gid());
    }

    @Test
    void rejectsWrongLengthsAndOutOfRangeFields() {
        assertThrows(IllegalArgumentException.class, () -> QpEndpoint.fromBytes(new byte[QpEndpoint.BYTES - 1]));
        assertThrows(IllegalArgumentException.class, () -> QpEndpoint.fromBytes(new byte[QpEndpoint.BYTES + 1]));
        assertThrows(IllegalArgumentException.class, () -> new QpEndpoint(1 << 24, 0, 0, GID));
        assertThrows(IllegalArgumentException.class, () -> new QpEndpoint(1, 1 << 24, 0, GID));
        assertThrows(IllegalArgumentException.class, () -> new QpEndpoint(1, 0, 1 << 16, GID));
        assertThrows(IllegalArgumentException.class, () -> new QpEndpoint(1, 0, 0, new byte[15]));
        byte[] bad = new QpEndpoint(1, 2, 3, GID).toBytes();
        bad[0] = 1; // qp number 0x01000001 does not fit 24 bits
        assertThrows(IllegalArgumentException.class, () -> QpEndpoint.fromBytes(bad));
    }

    @Test
    void theGidIsCopiedInAndOut() {
        byte[] gid = GID.clone();
        QpEndpoint e = new QpEndpoint(1, 2, 3, gid);
        gid[15] = 0;
        e.gid()[14] = 0;
        assertArrayEquals(GID, e.gid());
        assertNotEquals(e, new QpEndpoint(1, 2, 3, gid));
    }

    @Test
    void describesTheGid() {
        QpEndpoint e = new QpEndpoint(17, 5, 0, GID);
        assertTrue(e.hasGid());
        assertFalse(new QpEndpoint(17, 5, 1, new byte[16]).hasGid());
        assertEquals("QpEndpoint[qp 17, psn 5, lid 0, gid ::ffff:10.0.2.15]", e.toString());
        byte[] linkLocal = HexFormat.of().parseHex("fe800000000000000250b6fffe123456");
        assertEquals("fe80:0000:0000:0000:0250:b6ff:fe12:3456", Gids.format(linkLocal));
        assertTrue(Gids.isIpv4Mapped(GID));
        assertFalse(Gids.isIpv4Mapped(linkLocal));
    }
}
