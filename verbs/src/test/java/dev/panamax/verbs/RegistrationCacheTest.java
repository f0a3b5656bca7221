package dev.panamax.verbs;

import dev.panamax.memory.HostMemory;
import dev.panamax.testing.RdmaTest;
import dev.panamax.verbs.RdmaTestDevice.Loopback;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static dev.panamax.verbs.RdmaTestDevice.awaitOne;
import static dev.panamax.verbs.RdmaTestDevice.fill;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@RdmaTest
class RegistrationCacheTest {

    @Test
    void registersOnceAndServesSegmentsWithinARegisteredOne() {
        try (Loopback l = new Loopback().connect(); Arena arena = Arena.ofConfined();
             RegistrationCache cache = new RegistrationCache(l.pd, Access.ALL_REMOTE, 8)) {
            MemorySegment buf = HostMemory.allocate(arena, 65536);
            MemoryRegion mr = cache.get(buf);
            assertSame(mr, cache.get(buf));
            MemorySegment part = buf.asSlice(4096, 1000);
            assertSame(mr, cache.get(part));
            assertEquals(4096, mr.offsetOf(part));
            assertEquals(1, cache.misses());
            assertEquals(2, cache.hits());
            assertEquals(1, cache.size());

            // the cached region works in a request
            MemorySegment dst = HostMemory.allocate(arena, 4096);
            MemoryRegion dstMr = cache.get(dst);
            fill(part, 9);
            WorkCompletions wcs = WorkCompletions.allocate(arena, 1);
            l.a.postSend(SendRequest.allocate(arena).opcode(Opcode.RDMA_WRITE).local(mr, mr.offsetOf(part), 1000)
                    .remote(dstMr.address(), dstMr.rkey()));
            awaitOne(l.cqA, wcs);
            assertEquals(-1, dst.asSlice(0, 1000).mismatch(part));
            assertEquals(2, cache.misses());
        }
    }

    @Test
    void evictsTheLeastRecentlyUsedRegionAndDeregistersIt() {
        try (Loopback l = new Loopback(); Arena arena = Arena.ofConfined();
             RegistrationCache cache = new RegistrationCache(l.pd, Access.LOCAL_WRITE, 2)) {
            MemorySegment a = HostMemory.allocate(arena, 4096), b = HostMemory.allocate(arena, 4096),
                    c = HostMemory.allocate(arena, 4096);
            MemoryRegion ma = cache.get(a);
            MemoryRegion mb = cache.get(b);
            cache.get(a);
            MemoryRegion mc = cache.get(c);
            assertFalse(mb.isOpen(), "b was least recently used");
            assertTrue(ma.isOpen());
            assertTrue(mc.isOpen());
            assertEquals(1, cache.evictions());
            assertEquals(2, cache.size());
            MemoryRegion mb2 = cache.get(b);
            assertNotSame(mb, mb2);
            assertEquals(4, cache.misses());
        }
    }

    @Test
    void regionsOfClosedArenasAreDroppedAndAllAreDeregisteredOnClose() {
        try (Loopback l = new Loopback(); Arena live = Arena.ofConfined()) {
            RegistrationCache cache = new RegistrationCache(l.pd, Access.LOCAL_WRITE, 8);
            MemoryRegion dead;
            try (Arena arena = Arena.ofConfined()) {
                dead = cache.get(HostMemory.allocate(arena, 4096));
            }
            assertTrue(dead.isOpen(), "dropped lazily");
            MemoryRegion alive = cache.get(HostMemory.allocate(live, 4096));
            assertFalse(dead.isOpen(), "dropped on the next miss");
            assertEquals(1, cache.size());
            cache.close();
            cache.close();
            assertFalse(alive.isOpen());
            assertEquals(1, alive.deregistrations);
            assertEquals(1, dead.deregistrations);
            assertThrows(IllegalStateException.class, () -> cache.get(HostMemory.allocate(live, 64)));
        }
    }

    @Test
    void aRegionClosedElsewhereIsReplaced() {
        try (Loopback l = new Loopback(); Arena arena = Arena.ofConfined();
             RegistrationCache cache = new RegistrationCache(l.pd, Access.LOCAL_WRITE, 8)) {
            MemorySegment buf = HostMemory.allocate(arena, 4096);
            MemoryRegion first = cache.get(buf);
            first.close();
            MemoryRegion second = cache.get(buf);
            assertNotSame(first, second);
            assertTrue(second.isOpen());
            assertEquals(1, first.deregistrations);
        }
    }
}
