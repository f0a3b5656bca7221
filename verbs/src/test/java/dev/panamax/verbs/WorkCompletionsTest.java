package dev.panamax.verbs;

import dev.panamax.bindings.verbs.ibv_wc;
import dev.panamax.bindings.verbs.verbs_h;
import dev.panamax.testing.RdmaTestSupport;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The flyweight reads the fields of the struct ibv_wc array that ibv_poll_cq fills. */
class WorkCompletionsTest {

    private static MemorySegment entry(WorkCompletions wcs, int i) {
        return wcs.array().asSlice(i * ibv_wc.sizeof(), ibv_wc.sizeof());
    }

    @Test
    void readsTheFieldsOfEachCompletion() {
        try (Arena arena = Arena.ofConfined()) {
            WorkCompletions wcs = WorkCompletions.allocate(arena, 4);
            assertEquals(4, wcs.capacity());
            assertEquals(4 * ibv_wc.sizeof(), wcs.array().byteSize());

            MemorySegment a = entry(wcs, 0);
            ibv_wc.wr_id(a, 7);
            ibv_wc.status(a, verbs_h.IBV_WC_SUCCESS());
            ibv_wc.opcode(a, verbs_h.IBV_WC_RECV_RDMA_WITH_IMM());
            ibv_wc.byte_len(a, 0xFFFF_FFFF); // 4 GiB - 1: read as an unsigned length
            ibv_wc.wc_flags(a, verbs_h.IBV_WC_WITH_IMM());
            ibv_wc.qp_num(a, 0x12);
            // __be32 imm_data as the device writes it: network byte order
            a.asSlice(ibv_wc.imm_data$offset(), 4).copyFrom(MemorySegment.ofArray(new byte[] {0x0a, 0x0b, 0x0c, 0x0d}));

            MemorySegment b = entry(wcs, 1);
            ibv_wc.wr_id(b, -1L);
            ibv_wc.status(b, verbs_h.IBV_WC_REM_ACCESS_ERR());
            ibv_wc.vendor_err(b, 0x88);

            wcs.setCount(2);
            assertEquals(2, wcs.count());
            assertEquals(7, wcs.wrId(0));
            assertTrue(wcs.isSuccess(0));
            assertEquals(WorkCompletions.OPCODE_RECV_RDMA_WITH_IMM, wcs.opcode(0));
            assertEquals(0xFFFF_FFFFL, wcs.byteLength(0));
            assertTrue(wcs.hasImmediate(0));
            assertEquals(0x0a0b0c0d, wcs.immediate(0));
            assertEquals(0x12, wcs.qpNumber(0));

            assertEquals(-1L, wcs.wrId(1));
            assertFalse(wcs.isSuccess(1));
            assertFalse(wcs.hasImmediate(1));
            assertEquals(0x88, wcs.vendorError(1));
        }
    }

    @Test
    void onlyTheCompletionsOfTheLastPollCanBeRead() {
        try (Arena arena = Arena.ofConfined()) {
            WorkCompletions wcs = WorkCompletions.allocate(arena, 4);
            assertThrows(IndexOutOfBoundsException.class, () -> wcs.wrId(0));
            wcs.setCount(1);
            assertDoesNotThrow(() -> wcs.wrId(0));
            assertThrows(IndexOutOfBoundsException.class, () -> wcs.status(1));
            assertThrows(IndexOutOfBoundsException.class, () -> wcs.status(-1));
            assertThrows(IllegalArgumentException.class, () -> WorkCompletions.allocate(arena, 0));
        }
    }

    /** Needs libibverbs (ibv_wc_status_str) but no device. */
    @Test
    void failedCompletionsThrowNamingTheStatusString() {
        if (!Verbs.isAvailable()) {
            RdmaTestSupport.rdmaMissing(Verbs.unavailabilityCause());
        }
        try (Arena arena = Arena.ofConfined()) {
            WorkCompletions wcs = WorkCompletions.allocate(arena, 2);
            ibv_wc.wr_id(entry(wcs, 0), 1);
            MemorySegment failed = entry(wcs, 1);
            ibv_wc.wr_id(failed, 99);
            ibv_wc.status(failed, verbs_h.IBV_WC_REM_ACCESS_ERR());
            ibv_wc.qp_num(failed, 17);
            wcs.setCount(2);
            assertDoesNotThrow(() -> wcs.requireSuccess(0));
            assertEquals("success", wcs.statusString(0));
            assertEquals("remote access error", wcs.statusString(1));
            WorkCompletionException e = assertThrows(WorkCompletionException.class, wcs::requireAllSuccess);
            assertEquals("ibv_poll_cq", e.verb());
            assertEquals(verbs_h.IBV_WC_REM_ACCESS_ERR(), e.status());
            assertEquals(99, e.wrId());
            assertEquals(17, e.qpNumber());
            assertEquals("remote access error", e.statusString());
            assertEquals("work completion failed: remote access error (status 10); wr_id 99, queue pair 17, "
                    + "vendor error 0x0", e.getMessage());
            assertEquals("transport retry counter exceeded",
                    WorkCompletions.describeStatus(verbs_h.IBV_WC_RETRY_EXC_ERR()));
        }
    }

    @Test
    void opcodeNames() {
        assertEquals("RECV", WorkCompletions.opcodeName(WorkCompletions.OPCODE_RECV));
        assertEquals("RDMA_READ", WorkCompletions.opcodeName(WorkCompletions.OPCODE_RDMA_READ));
        assertEquals("opcode 77", WorkCompletions.opcodeName(77));
    }
}
