package dev.panamax.verbs;

import dev.panamax.bindings.verbs.ibv_recv_wr;
import dev.panamax.bindings.verbs.ibv_send_wr;
import dev.panamax.bindings.verbs.ibv_sge;
import dev.panamax.bindings.verbs.verbs_h;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The setters patch the fields of struct ibv_send_wr / ibv_recv_wr and their ibv_sge, as the C layout says. */
class SendRequestTest {

    @Test
    void newRequestIsASignaledSendWithoutScatterGatherEntries() {
        try (Arena arena = Arena.ofConfined()) {
            SendRequest r = SendRequest.allocate(arena);
            MemorySegment wr = r.struct();
            assertEquals(ibv_send_wr.sizeof(), wr.byteSize());
            assertEquals(verbs_h.IBV_WR_SEND(), ibv_send_wr.opcode(wr));
            assertEquals(verbs_h.IBV_SEND_SIGNALED(), ibv_send_wr.send_flags(wr));
            assertEquals(0, ibv_send_wr.num_sge(wr));
            assertEquals(0, ibv_send_wr.next(wr).address());
            assertEquals(r.sge().address(), ibv_send_wr.sg_list(wr).address());
        }
    }

    @Test
    void settersPatchTheSendWorkRequestInPlace() {
        try (Arena arena = Arena.ofConfined()) {
            SendRequest r = SendRequest.allocate(arena);
            MemorySegment wr = r.struct();
            r.wrId(0x1122_3344_5566_7788L).opcode(Opcode.RDMA_WRITE_WITH_IMM)
                    .local(0x7f00_0000_1000L, 4096, 0xabcd)
                    .remote(0x5555_0000_2000L, 0x1234_5678)
                    .immediate(0x0102_0304)
                    .signaled(false);

            assertEquals(0x1122_3344_5566_7788L, ibv_send_wr.wr_id(wr));
            assertEquals(verbs_h.IBV_WR_RDMA_WRITE_WITH_IMM(), ibv_send_wr.opcode(wr));
            assertEquals(0, ibv_send_wr.send_flags(wr));
            assertEquals(1, ibv_send_wr.num_sge(wr));
            MemorySegment sge = r.sge();
            assertEquals(0x7f00_0000_1000L, ibv_sge.addr(sge));
            assertEquals(4096, ibv_sge.length(sge));
            assertEquals(0xabcd, ibv_sge.lkey(sge));
            MemorySegment rdma = ibv_send_wr.wr.rdma(ibv_send_wr.wr(wr));
            assertEquals(0x5555_0000_2000L, ibv_send_wr.wr.rdma.remote_addr(rdma));
            assertEquals(0x1234_5678, ibv_send_wr.wr.rdma.rkey(rdma));
            // __be32 imm_data: network byte order in memory
            byte[] imm = wr.asSlice(ibv_send_wr.imm_data$offset(), 4).toArray(ValueLayout.JAVA_BYTE);
            assertArrayEquals(new byte[] {1, 2, 3, 4}, imm);

            assertFalse(r.isInline());
            r.signaled(true).inline(true).fence(true);
            assertTrue(r.isInline());
            assertEquals(verbs_h.IBV_SEND_SIGNALED() | verbs_h.IBV_SEND_INLINE() | verbs_h.IBV_SEND_FENCE(),
                    ibv_send_wr.send_flags(wr));
            r.inline(false);
            assertFalse(r.isInline());
            assertEquals(verbs_h.IBV_SEND_SIGNALED() | verbs_h.IBV_SEND_FENCE(), ibv_send_wr.send_flags(wr));
        }
    }

    @Test
    void everyOpcodeWritesItsNativeValue() {
        try (Arena arena = Arena.ofConfined()) {
            SendRequest r = SendRequest.allocate(arena);
            for (Opcode op : Opcode.values()) {
                r.opcode(op);
                assertEquals(op.nativeValue(), ibv_send_wr.opcode(r.struct()), op.name());
                assertEquals(op, r.opcode());
            }
            assertEquals(0, Opcode.RDMA_WRITE.nativeValue());
            assertEquals(4, Opcode.RDMA_READ.nativeValue());
        }
    }

    @Test
    void lengthsAre64BitInTheApiAnd32BitOnTheWire() {
        try (Arena arena = Arena.ofConfined()) {
            SendRequest r = SendRequest.allocate(arena);
            r.local(0x1000, 0xFFFF_FFFFL, 1); // the largest a sge can carry
            assertEquals(0xFFFF_FFFFL, Integer.toUnsignedLong(ibv_sge.length(r.sge())));
            assertThrows(IllegalArgumentException.class, () -> r.local(0x1000, 1L << 32, 1));
            assertThrows(IllegalArgumentException.class, () -> r.local(0x1000, -1, 1));
            // zero bytes: no scatter/gather entry (a sge length of 0 means 2 GiB to some devices)
            r.local(0x1000, 0, 1);
            assertEquals(0, ibv_send_wr.num_sge(r.struct()));
        }
    }

    @Test
    void receiveRequestPatchesTheReceiveWorkRequest() {
        try (Arena arena = Arena.ofConfined()) {
            ReceiveRequest r = ReceiveRequest.allocate(arena);
            MemorySegment wr = r.struct();
            assertEquals(0, ibv_recv_wr.num_sge(wr));
            assertEquals(r.sge().address(), ibv_recv_wr.sg_list(wr).address());
            r.wrId(42).local(0x2000, 512, 0x77);
            assertEquals(42, ibv_recv_wr.wr_id(wr));
            assertEquals(1, ibv_recv_wr.num_sge(wr));
            assertEquals(0x2000, ibv_sge.addr(r.sge()));
            assertEquals(512, ibv_sge.length(r.sge()));
            assertEquals(0x77, ibv_sge.lkey(r.sge()));
            assertThrows(IllegalArgumentException.class, () -> r.local(0, 1L << 32, 1));
        }
    }

    @Test
    void closedRequestIsRefusedAndFreesItsOwnArena() {
        SendRequest r = SendRequest.allocate();
        MemorySegment wr = r.struct();
        r.requirePostable();
        r.close();
        r.close(); // idempotent
        assertThrows(IllegalStateException.class, r::requirePostable);
        assertEquals(false, wr.scope().isAlive());
    }
}
