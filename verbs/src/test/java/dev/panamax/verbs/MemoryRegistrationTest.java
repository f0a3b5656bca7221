package dev.panamax.verbs;

import dev.panamax.memory.HostMemory;
import dev.panamax.testing.RdmaTest;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@RdmaTest
class MemoryRegistrationTest {

    @Test
    void registersSegmentsAndSlicesWithTheirExactRange() {
        try (VerbsContext context = RdmaTestDevice.openDevice();
             Arena arena = Arena.ofConfined()) {
            ProtectionDomain pd = context.allocateProtectionDomain();
            long size = 64L << 20; // 64 MiB: more than an int of pages' worth of bytes is beyond the test VM
            MemorySegment big = HostMemory.allocate(arena, size);
            MemoryRegion whole = pd.register(big, Access.ALL_REMOTE);
            assertEquals(big.address(), whole.address());
            assertEquals(size, whole.byteSize());
            assertEquals(size, whole.registeredByteSize());
            assertSame(big, whole.segment());
            assertEquals(Access.ALL_REMOTE, whole.accessFlags());
            assertTrue(whole.isOpen());

            MemorySegment slice = big.asSlice(4096 + 100, 8192);
            MemoryRegion part = pd.register(slice, Access.LOCAL_WRITE);
            assertEquals(slice.address(), part.address());
            assertEquals(8192, part.registeredByteSize());
            assertNotEquals(whole.lkey(), part.lkey());
            assertEquals(4096 + 100, whole.offsetOf(slice));
            assertEquals(0, part.offsetOf(slice));
            assertTrue(whole.covers(big.address() + size - 1, 1));
            assertFalse(whole.covers(big.address() + size - 1, 2));
            assertThrows(IllegalArgumentException.class, () -> part.offsetOf(big));

            part.close();
            assertFalse(part.isOpen());
            assertThrows(IllegalStateException.class, part::registeredByteSize);
            whole.close();
        }
    }

    @Test
    void refusesHeapEmptyAndDeadSegments() {
        try (VerbsContext context = RdmaTestDevice.openDevice()) {
            ProtectionDomain pd = context.allocateProtectionDomain();
            assertThrows(IllegalArgumentException.class,
                    () -> pd.register(MemorySegment.ofArray(new byte[64]), Access.LOCAL_WRITE));
            MemorySegment dead;
            try (Arena arena = Arena.ofConfined()) {
                assertThrows(IllegalArgumentException.class, () -> pd.register(arena.allocate(0), Access.LOCAL_WRITE));
                dead = arena.allocate(4096);
            }
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> pd.register(dead, Access.LOCAL_WRITE));
            assertTrue(e.getMessage().contains("closed arena"), e.getMessage());
        }
    }

    @Test
    void anArenaOwnedRegionIsDeregisteredOnceWhenTheArenaCloses() {
        try (VerbsContext context = RdmaTestDevice.openDevice()) {
            ProtectionDomain pd = context.allocateProtectionDomain();
            MemoryRegion mr;
            try (Arena arena = Arena.ofConfined()) {
                mr = pd.register(arena.allocate(8192, 4096), Access.ALL_REMOTE, arena);
                assertTrue(mr.isOpen());
            }
            assertFalse(mr.isOpen());
            assertEquals(1, mr.deregistrations);
            mr.close();
            pd.close(); // would fail with EBUSY had the region stayed registered
            assertEquals(1, mr.deregistrations);
        }
    }

    @Test
    void anArenaOwnedRegionClosedFirstIsNotDeregisteredAgainByTheArena() {
        try (VerbsContext context = RdmaTestDevice.openDevice()) {
            ProtectionDomain pd = context.allocateProtectionDomain();
            Arena arena = Arena.ofShared();
            MemoryRegion explicit = pd.register(arena.allocate(4096, 4096), Access.LOCAL_WRITE, arena);
            MemoryRegion byDomain = pd.register(arena.allocate(4096, 4096), Access.LOCAL_WRITE, arena);
            explicit.close();
            pd.close(); // deregisters byDomain
            assertFalse(byDomain.isOpen());
            arena.close(); // runs both cleanups: nothing left to do
            assertEquals(1, explicit.deregistrations);
            assertEquals(1, byDomain.deregistrations);
            assertThrows(IllegalStateException.class, () -> pd.register(
                    Arena.ofAuto().allocate(64), Access.LOCAL_WRITE, Arena.ofAuto()));
        }
    }

    @Test
    void aClosedOwnerArenaIsRefused() {
        try (VerbsContext context = RdmaTestDevice.openDevice();
             Arena live = Arena.ofConfined()) {
            ProtectionDomain pd = context.allocateProtectionDomain();
            Arena closed = Arena.ofConfined();
            closed.close();
            assertThrows(IllegalStateException.class,
                    () -> pd.register(live.allocate(4096), Access.LOCAL_WRITE, closed));
        }
    }
}
