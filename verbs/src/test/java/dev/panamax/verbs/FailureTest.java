package dev.panamax.verbs;

import dev.panamax.bindings.verbs.verbs_h;
import dev.panamax.memory.HostMemory;
import dev.panamax.memory.concurrent.IdleStrategies;
import dev.panamax.testing.RdmaTest;
import dev.panamax.verbs.RdmaTestDevice.Loopback;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;

import static dev.panamax.verbs.RdmaTestDevice.TIMEOUT_NANOS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Failures surface as exceptions that say what is wrong. */
@RdmaTest
class FailureTest {

    @Test
    void aWrongRkeyFailsWithRemoteAccessErrorAndTheQueuePairGoesToError() {
        try (Loopback l = new Loopback().connect(); Arena arena = Arena.ofConfined()) {
            MemoryRegion mrA = l.pd.register(HostMemory.allocate(arena, 4096), Access.ALL_REMOTE);
            MemoryRegion mrB = l.pd.register(HostMemory.allocate(arena, 4096), Access.ALL_REMOTE);
            SendRequest write = SendRequest.allocate(arena).wrId(5).opcode(Opcode.RDMA_WRITE).local(mrA, 0, 64)
                    .remote(mrB.address(), mrB.rkey() ^ 0x5A5A_0000);
            l.a.postSend(write);
            WorkCompletions wcs = WorkCompletions.allocate(arena, 4);
            assertEquals(1, l.cqA.await(wcs, TIMEOUT_NANOS, IdleStrategies.backoff()));
            assertFalse(wcs.isSuccess(0));
            assertEquals("remote access error", wcs.statusString(0));
            WorkCompletionException e = assertThrows(WorkCompletionException.class, () -> wcs.requireSuccess(0));
            System.out.println("wrong rkey: " + e.getMessage());
            assertEquals(verbs_h.IBV_WC_REM_ACCESS_ERR(), e.status());
            assertEquals(5, e.wrId());
            assertEquals(l.a.qpNumber(), e.qpNumber());
            assertTrue(e.getMessage().startsWith("work completion failed: remote access error (status 10); wr_id 5"),
                    e.getMessage());

            assertEquals(QpState.ERROR, l.a.state(), "a failed request moves an RC queue pair to ERROR");
            IllegalStateException refused = assertThrows(IllegalStateException.class, () -> l.a.postSend(write));
            assertTrue(refused.getMessage().contains("in state ERROR"), refused.getMessage());
        }
    }

    @Test
    void aQueuePairInErrorRefusesPostsAndFlushesWhatWasPosted() {
        try (Loopback l = new Loopback().connect(); Arena arena = Arena.ofConfined()) {
            MemoryRegion mr = l.pd.register(HostMemory.allocate(arena, 4096), Access.ALL_REMOTE);
            l.b.postReceive(ReceiveRequest.allocate(arena).wrId(8).local(mr, 0, 128));
            l.b.toError();
            WorkCompletions wcs = WorkCompletions.allocate(arena, 4);
            assertEquals(1, l.cqB.await(wcs, TIMEOUT_NANOS, IdleStrategies.backoff()));
            assertEquals(8, wcs.wrId(0));
            assertEquals(verbs_h.IBV_WC_WR_FLUSH_ERR(), wcs.status(0));
            WorkCompletionException e = assertThrows(WorkCompletionException.class, () -> wcs.requireSuccess(0));
            assertTrue(e.getMessage().contains(WorkCompletions.describeStatus(verbs_h.IBV_WC_WR_FLUSH_ERR())));

            IllegalStateException send = assertThrows(IllegalStateException.class,
                    () -> l.b.postSend(SendRequest.allocate(arena).local(mr, 0, 8)));
            assertTrue(send.getMessage().contains("queue pair " + l.b.qpNumber()), send.getMessage());
            assertTrue(send.getMessage().contains("in state ERROR"), send.getMessage());
            IllegalStateException recv = assertThrows(IllegalStateException.class,
                    () -> l.b.postReceive(ReceiveRequest.allocate(arena).local(mr, 0, 8)));
            assertTrue(recv.getMessage().contains("in state ERROR"), recv.getMessage());
        }
    }

    @Test
    void aDeregisteredRegionIsRefusedBeforePosting() {
        try (Loopback l = new Loopback().connect(); Arena arena = Arena.ofConfined()) {
            MemoryRegion mr = l.pd.register(HostMemory.allocate(arena, 4096), Access.ALL_REMOTE);
            SendRequest send = SendRequest.allocate(arena).local(mr, 0, 16);
            ReceiveRequest recv = ReceiveRequest.allocate(arena).local(mr, 0, 16);
            mr.close();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> l.a.postSend(send));
            assertTrue(e.getMessage().contains("is deregistered"), e.getMessage());
            assertThrows(IllegalStateException.class, () -> l.b.postReceive(recv));
            assertEquals(0, l.cqA.poll(WorkCompletions.allocate(arena, 1)), "nothing was posted");
        }
    }

    @Test
    void aRegionWhoseArenaClosedIsRefusedBeforePosting() {
        try (Loopback l = new Loopback().connect(); Arena requests = Arena.ofConfined()) {
            Arena buffers = Arena.ofConfined();
            MemoryRegion mr = l.pd.register(HostMemory.allocate(buffers, 4096), Access.ALL_REMOTE);
            SendRequest send = SendRequest.allocate(requests).local(mr, 0, 16);
            buffers.close(); // the region is still registered, the memory is gone
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> l.a.postSend(send));
            assertTrue(e.getMessage().contains("arena is closed"), e.getMessage());
            assertTrue(mr.isOpen());
        }
    }

    @Test
    void aRegionOfAnotherProtectionDomainIsRefused() {
        try (Loopback l = new Loopback().connect(); Arena arena = Arena.ofConfined()) {
            ProtectionDomain other = l.context.allocateProtectionDomain();
            MemoryRegion foreign = other.register(HostMemory.allocate(arena, 4096), Access.ALL_REMOTE);
            assertThrows(IllegalArgumentException.class,
                    () -> l.a.postSend(SendRequest.allocate(arena).local(foreign, 0, 16)));
        }
    }

    @Test
    void waitingForACompletionThatNeverComesTimesOutNamingTheQueue() {
        try (Loopback l = new Loopback().connect(); Arena arena = Arena.ofConfined()) {
            WorkCompletions wcs = WorkCompletions.allocate(arena, 1);
            VerbsTimeoutException e = assertThrows(VerbsTimeoutException.class,
                    () -> l.cqA.await(wcs, 50_000_000L, IdleStrategies.backoff()));
            assertTrue(e.getMessage().contains(l.cqA.toString() + " within 50 ms"), e.getMessage());
            assertTrue(e.getMessage().contains(l.context.deviceName()), e.getMessage());
        }
    }
}
