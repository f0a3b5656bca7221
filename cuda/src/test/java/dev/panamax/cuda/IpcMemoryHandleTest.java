package dev.panamax.cuda;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class IpcMemoryHandleTest {

    private static byte[] sample() {
        byte[] b = new byte[IpcMemoryHandle.BYTE_SIZE];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) (i * 7 + 3);
        }
        return b;
    }

    @Test
    void holdsExactly64Bytes() {
        assertEquals(64, IpcMemoryHandle.BYTE_SIZE);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () ->
                new IpcMemoryHandle(new byte[63]));
        assertEquals("a CUDA IPC memory handle has 64 bytes, not 63", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> IpcMemoryHandle.fromBytes(new byte[65]));
        assertThrows(NullPointerException.class, () -> new IpcMemoryHandle(null));
    }

    @Test
    void copiesInAndOut() {
        byte[] b = sample();
        IpcMemoryHandle h = IpcMemoryHandle.fromBytes(b);
        b[0] = 99;
        assertEquals(3, h.bytes()[0]);
        h.toBytes()[1] = 99;
        h.bytes()[1] = 99;
        assertArrayEquals(sample(), h.toBytes());
    }

    @Test
    void roundTripsThroughHexAndComparesByContent() {
        IpcMemoryHandle h = IpcMemoryHandle.fromBytes(sample());
        String hex = h.toHex();
        assertEquals(128, hex.length());
        assertTrue(hex.startsWith("030a11"), hex);
        assertEquals(h, IpcMemoryHandle.fromHex(hex));
        assertEquals(h.hashCode(), IpcMemoryHandle.fromHex(hex).hashCode());
        byte[] other = sample();
        other[63]++;
        assertNotEquals(h, IpcMemoryHandle.fromBytes(other));
        assertEquals("IpcMemoryHandle[030a11181f262d34...]", h.toString());
        assertThrows(IllegalArgumentException.class, () -> IpcMemoryHandle.fromHex("abcd"));
        assertThrows(IllegalArgumentException.class, () -> IpcMemoryHandle.fromHex("zz".repeat(64)));
    }
}
