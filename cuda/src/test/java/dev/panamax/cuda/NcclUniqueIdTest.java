package dev.panamax.cuda;

import org.junit.jupiter.api.Test;

import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class NcclUniqueIdTest {

    private static byte[] pattern() {
        byte[] b = new byte[NcclUniqueId.BYTE_SIZE];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) (i * 37 + 11);
        }
        return b;
    }

    @Test
    void hexRoundTripsEveryByte() {
        NcclUniqueId id = new NcclUniqueId(pattern());
        String hex = id.toHex();
        assertEquals(256, hex.length());
        assertTrue(hex.startsWith("0b3055"), hex); // 11, 48, 85
        assertEquals(id, NcclUniqueId.fromHex(hex));
        assertArrayEquals(pattern(), NcclUniqueId.fromHex(hex).bytes());
        assertEquals(id, NcclUniqueId.fromHex(hex.toUpperCase(Locale.ROOT)));
    }

    @Test
    void bytesAreCopiedInAndOut() {
        byte[] b = pattern();
        NcclUniqueId id = new NcclUniqueId(b);
        b[0] = 99;
        assertEquals(11, id.bytes()[0]);
        id.bytes()[1] = 99;
        assertEquals(48, id.bytes()[1]);
        assertEquals(new NcclUniqueId(pattern()).hashCode(), id.hashCode());
        assertNotEquals(new NcclUniqueId(new byte[NcclUniqueId.BYTE_SIZE]), id);
        assertEquals("NcclUniqueId[0b30557a9fc4e90e...]", id.toString());
    }

    @Test
    void wrongSizesAndDigitsAreRejected() {
        assertEquals("an NCCL unique id has 128 bytes, not 64",
                assertThrows(IllegalArgumentException.class, () -> new NcclUniqueId(new byte[64])).getMessage());
        assertThrows(NullPointerException.class, () -> new NcclUniqueId(null));
        assertEquals("an NCCL unique id has 256 hex digits, not 255",
                assertThrows(IllegalArgumentException.class, () -> NcclUniqueId.fromHex("0".repeat(255))).getMessage());
        assertThrows(IllegalArgumentException.class, () -> NcclUniqueId.fromHex("g" + "0".repeat(255)));
    }
}
