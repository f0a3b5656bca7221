package dev.panamax.verbs;

import dev.panamax.memory.HostMemory;
import dev.panamax.testing.RdmaTest;
import dev.panamax.verbs.RdmaTestDevice.Loopback;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static dev.panamax.verbs.RdmaTestDevice.awaitOne;
import static dev.panamax.verbs.RdmaTestDevice.fill;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Two connected queue pairs on one port: send/receive, RDMA write, write with immediate, RDMA read. */
@RdmaTest
class DataPathTest {
    private static final int SIZE = 16384;

    private Loopback l;
    private Arena arena;
    private MemorySegment bufA;
    private MemorySegment bufB;
    private MemoryRegion mrA;
    private MemoryRegion mrB;
    private WorkCompletions wcs;

    @BeforeEach
    void setUp() {
        l = new Loopback().connect();
        arena = Arena.ofConfined();
        bufA = HostMemory.allocate(arena, SIZE);
        bufB = HostMemory.allocate(arena, SIZE);
        mrA = l.pd.register(bufA, Access.ALL_REMOTE, arena);
        mrB = l.pd.register(bufB, Access.ALL_REMOTE, arena);
        wcs = WorkCompletions.allocate(arena, 4);
    }

    @AfterEach
    void tearDown() {
        if (l != null) {
            l.close();
        }
        if (arena != null) {
            arena.close();
        }
    }

    @Test
    void sendIsReceivedIntoThePostedBuffer() {
        fill(bufA, 1);
        l.b.postReceive(ReceiveRequest.allocate(arena).wrId(21).local(mrB, 512, 1024));
        l.a.postSend(SendRequest.allocate(arena).wrId(11).opcode(Opcode.SEND).local(mrA, 100, 700));

        awaitOne(l.cqA, wcs);
        assertEquals(11, wcs.wrId(0));
        assertEquals(WorkCompletions.OPCODE_SEND, wcs.opcode(0));
        assertEquals(l.a.qpNumber(), wcs.qpNumber(0));
        awaitOne(l.cqB, wcs);
        assertEquals(21, wcs.wrId(0));
        assertEquals(WorkCompletions.OPCODE_RECV, wcs.opcode(0));
        assertEquals(700, wcs.byteLength(0));
        assertFalse(wcs.hasImmediate(0));
        assertEquals(l.b.qpNumber(), wcs.qpNumber(0));
        assertEquals(-1, bufB.asSlice(512, 700).mismatch(bufA.asSlice(100, 700)));
    }

    @Test
    void sendWithImmediateDeliversTheImmediateToTheReceiver() {
        l.b.postReceive(ReceiveRequest.allocate(arena).wrId(22).local(mrB, 0, 64));
        l.a.postSend(SendRequest.allocate(arena).wrId(12).opcode(Opcode.SEND_WITH_IMM).local(mrA, 0, 8)
                .immediate(0xCAFE_BABE));
        awaitOne(l.cqA, wcs);
        awaitOne(l.cqB, wcs);
        assertEquals(WorkCompletions.OPCODE_RECV, wcs.opcode(0));
        assertTrue(wcs.hasImmediate(0));
        assertEquals(0xCAFE_BABE, wcs.immediate(0));
        assertEquals(8, wcs.byteLength(0));
    }

    @Test
    void rdmaWriteLandsInRemoteMemoryWithoutARemoteCompletion() {
        fill(bufA, 2);
        l.a.postSend(SendRequest.allocate(arena).wrId(13).opcode(Opcode.RDMA_WRITE).local(mrA, 0, 4096)
                .remote(mrB.address() + 8192, mrB.rkey()));
        awaitOne(l.cqA, wcs);
        assertEquals(13, wcs.wrId(0));
        assertEquals(WorkCompletions.OPCODE_RDMA_WRITE, wcs.opcode(0));
        assertEquals(-1, bufB.asSlice(8192, 4096).mismatch(bufA.asSlice(0, 4096)));
        assertEquals(0, l.cqB.poll(wcs), "a one-sided write completes at the writer only");
    }

    @Test
    void rdmaWriteWithImmediateConsumesAReceiveAndCarriesTheImmediate() {
        fill(bufA, 3);
        l.b.postReceive(ReceiveRequest.allocate(arena).wrId(23)); // no buffer: the data goes where written
        l.a.postSend(SendRequest.allocate(arena).wrId(14).opcode(Opcode.RDMA_WRITE_WITH_IMM).local(mrA, 0, 3000)
                .remote(mrB.address(), mrB.rkey()).immediate(77));
        awaitOne(l.cqA, wcs);
        assertEquals(WorkCompletions.OPCODE_RDMA_WRITE, wcs.opcode(0));
        awaitOne(l.cqB, wcs);
        assertEquals(23, wcs.wrId(0));
        assertEquals(WorkCompletions.OPCODE_RECV_RDMA_WITH_IMM, wcs.opcode(0));
        assertTrue(wcs.hasImmediate(0));
        assertEquals(77, wcs.immediate(0));
        assertEquals(3000, wcs.byteLength(0));
        assertEquals(-1, bufB.asSlice(0, 3000).mismatch(bufA.asSlice(0, 3000)));
    }

    @Test
    void rdmaReadFetchesRemoteMemory() {
        fill(bufB, 4);
        l.a.postSend(SendRequest.allocate(arena).wrId(15).opcode(Opcode.RDMA_READ).local(mrA, 1024, 5000)
                .remote(mrB.address() + 10, mrB.rkey()));
        awaitOne(l.cqA, wcs);
        assertEquals(15, wcs.wrId(0));
        assertEquals(WorkCompletions.OPCODE_RDMA_READ, wcs.opcode(0));
        assertEquals(5000, wcs.byteLength(0));
        assertEquals(-1, bufA.asSlice(1024, 5000).mismatch(bufB.asSlice(10, 5000)));
    }

    /**
     * An inline write carries memory that is not registered (lkey 0, which the device would refuse to read) and may
     * be overwritten as soon as the post returns: the peer gets the bytes as they were when posted.
     */
    @Test
    void inlineWriteCarriesUnregisteredMemoryCopiedWhenPosted() {
        l.close();
        l = new Loopback(false, new QpCapabilities(8, 8, 1, 1, 64)).connect();
        assertTrue(l.a.capabilities().maxInlineData() >= 64, () -> "granted " + l.a.capabilities());
        mrB = l.pd.register(bufB, Access.ALL_REMOTE, arena);
        MemorySegment unregistered = arena.allocate(64);
        fill(unregistered, 5);
        MemorySegment posted = arena.allocate(64).copyFrom(unregistered);
        l.b.postReceive(ReceiveRequest.allocate(arena).wrId(24));
        l.a.postSend(SendRequest.allocate(arena).wrId(16).opcode(Opcode.RDMA_WRITE_WITH_IMM).inline(true)
                .local(unregistered.address(), 48, 0).remote(mrB.address() + 256, mrB.rkey()).immediate(48));
        fill(unregistered, 6);
        awaitOne(l.cqA, wcs);
        assertEquals(16, wcs.wrId(0));
        awaitOne(l.cqB, wcs);
        assertEquals(48, wcs.immediate(0));
        assertEquals(-1, bufB.asSlice(256, 48).mismatch(posted.asSlice(0, 48)));
    }

    @Test
    void anInlineSendLongerThanTheQueuePairTakesIsRefused() {
        int most = l.a.capabilities().maxInlineData();
        SendRequest send = SendRequest.allocate(arena).opcode(Opcode.SEND).inline(true).local(mrA, 0, most + 1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> l.a.postSend(send));
        assertTrue(e.getMessage().contains("inline"), e::getMessage);
    }

    @Test
    void oneRequestIsPatchedAndPostedAgainAndUnsignaledWritesGiveNoCompletion() {
        SendRequest write = SendRequest.allocate(arena).opcode(Opcode.RDMA_WRITE);
        for (int i = 0; i < 4; i++) {
            bufA.set(ValueLayout.JAVA_BYTE, i, (byte) (10 + i));
            write.wrId(100 + i).local(mrA, i, 1).remote(mrB.address() + i, mrB.rkey()).signaled(i == 3);
            l.a.postSend(write);
        }
        awaitOne(l.cqA, wcs); // only the last, signaled one; RC completes in order, so all are done
        assertEquals(103, wcs.wrId(0));
        for (int i = 0; i < 4; i++) {
            assertEquals(10 + i, bufB.get(ValueLayout.JAVA_BYTE, i));
        }
    }
}
