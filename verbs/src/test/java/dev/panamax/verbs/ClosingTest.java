package dev.panamax.verbs;

import dev.panamax.memory.HostMemory;
import dev.panamax.testing.RdmaTest;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Queue pairs before completion queues and memory regions, before the domain, before the context; each once. */
@RdmaTest
class ClosingTest {

    @Test
    void closingInOrderClosesEachObjectOnce() {
        try (Arena arena = Arena.ofConfined()) {
            VerbsContext context = RdmaTestDevice.openDevice();
            ProtectionDomain pd = context.allocateProtectionDomain();
            CompletionQueue cq = context.createCompletionQueue(8);
            assertTrue(cq.capacity() >= 8);
            QueuePair qp = pd.createReliableQueuePair(cq, cq, QpCapabilities.of(4, 4));
            MemoryRegion mr = pd.register(HostMemory.allocate(arena, 4096), Access.LOCAL_WRITE);

            qp.close();
            qp.close();
            assertFalse(qp.isOpen());
            assertThrows(IllegalStateException.class, qp::state);
            cq.close();
            cq.close();
            assertFalse(cq.isOpen());
            assertThrows(IllegalStateException.class, () -> cq.poll(WorkCompletions.allocate(arena, 1)));
            mr.close();
            mr.close();
            assertEquals(1, mr.deregistrations);
            pd.close();
            pd.close();
            assertFalse(pd.isOpen());
            context.close();
            context.close();
            assertFalse(context.isOpen());
        }
    }

    @Test
    void closingTheContextClosesEverythingItOwnsInOrder() {
        Arena arena = Arena.ofConfined();
        VerbsContext context = RdmaTestDevice.openDevice();
        ProtectionDomain pd1 = context.allocateProtectionDomain();
        ProtectionDomain pd2 = context.allocateProtectionDomain();
        CompletionQueue cq1 = context.createCompletionQueue(8);
        CompletionQueue cq2 = context.createCompletionQueue(8);
        QueuePair qp1 = pd1.createReliableQueuePair(cq1, cq2, QpCapabilities.of(4, 4));
        QueuePair qp2 = pd2.createReliableQueuePair(cq2, cq1, QpCapabilities.of(4, 4));
        MemoryRegion mr1 = pd1.register(HostMemory.allocate(arena, 4096), Access.LOCAL_WRITE);
        MemoryRegion mr2 = pd2.register(HostMemory.allocate(arena, 4096), Access.LOCAL_WRITE, arena);

        context.close(); // would throw had any destroy failed (EBUSY when the order is wrong)
        for (boolean open : new boolean[] {qp1.isOpen(), qp2.isOpen(), cq1.isOpen(), cq2.isOpen(), mr1.isOpen(),
                mr2.isOpen(), pd1.isOpen(), pd2.isOpen(), context.isOpen()}) {
            assertFalse(open);
        }
        assertEquals(1, mr1.deregistrations);
        assertEquals(1, mr2.deregistrations);
        arena.close(); // mr2's owner: already deregistered, not again
        assertEquals(1, mr2.deregistrations);
        context.close();
    }

    @Test
    void aCompletionQueueInUseCannotBeClosed() {
        try (VerbsContext context = RdmaTestDevice.openDevice()) {
            ProtectionDomain pd = context.allocateProtectionDomain();
            CompletionQueue cq = context.createCompletionQueue(8);
            QueuePair qp = pd.createReliableQueuePair(cq, cq, QpCapabilities.of(4, 4));
            IllegalStateException e = assertThrows(IllegalStateException.class, cq::close);
            assertTrue(e.getMessage().contains("used by 1 open queue pair"), e.getMessage());
            assertTrue(cq.isOpen());
            qp.close();
            cq.close();
            assertFalse(cq.isOpen());
        }
    }

    @Test
    void closingADomainClosesItsQueuePairsAndRegions() {
        try (VerbsContext context = RdmaTestDevice.openDevice(); Arena arena = Arena.ofConfined()) {
            ProtectionDomain pd = context.allocateProtectionDomain();
            CompletionQueue cq = context.createCompletionQueue(8);
            QueuePair qp = pd.createReliableQueuePair(cq, cq, QpCapabilities.of(4, 4));
            MemoryRegion mr = pd.register(HostMemory.allocate(arena, 4096), Access.LOCAL_WRITE);
            pd.close();
            assertFalse(qp.isOpen());
            assertFalse(mr.isOpen());
            cq.close(); // no queue pair uses it any more
            assertThrows(IllegalStateException.class, () ->
                    pd.createReliableQueuePair(cq, cq, QpCapabilities.of(1, 1)));
        }
    }
}
