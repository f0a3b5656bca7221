package dev.panamax.cuda;

import dev.panamax.memory.HostMemory;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Argument checks that happen before any driver call, so they run without a GPU. The context, stream, event
 * and memory here are made up (their handles point nowhere): a check that came after a driver call would
 * fail here (no libcuda) rather than pass.
 */
class ValidationTest {
    private static final long BASE = 0x7f2a00000000L;
    private final CudaContext context = new CudaContext(new CudaDevice(0, 0), MemorySegment.ofAddress(0x1000));
    private final DeviceMemory memory = DeviceMemory.allocated(context, BASE, 4096, false);
    private final CudaStream stream = new CudaStream(context, MemorySegment.ofAddress(0x2000));

    @Test
    void negativeDeviceOrdinalsAreRejected() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Cuda.device(-1));
        assertEquals("device ordinal must be >= 0: -1", e.getMessage());
    }

    @Test
    void emptyAndNegativeAllocationsAreRejected() {
        assertEquals("byteSize must be > 0: 0",
                assertThrows(IllegalArgumentException.class, () -> context.allocate(0)).getMessage());
        assertThrows(IllegalArgumentException.class, () -> context.allocate(-1));
        assertThrows(IllegalArgumentException.class, () -> context.allocatePinned(0));
        IpcMemoryHandle handle = IpcMemoryHandle.fromBytes(new byte[64]);
        assertThrows(IllegalArgumentException.class, () -> context.openIpc(handle, 0));
        assertThrows(NullPointerException.class, () -> context.openIpc(null));
    }

    @Test
    void registerHostNeedsAnAlivePageAlignedNativeSegment() {
        IllegalArgumentException heap = assertThrows(IllegalArgumentException.class,
                () -> context.registerHost(MemorySegment.ofArray(new byte[4096])));
        assertTrue(heap.getMessage().startsWith("registerHost needs a native segment"), heap.getMessage());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment page = HostMemory.allocate(arena, 2 * HostMemory.PAGE_SIZE);
            MemorySegment unaligned = page.asSlice(1, 4096);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () ->
                    context.registerHost(unaligned));
            assertEquals("registerHost needs a page-aligned segment (4096 bytes): address 0x"
                    + Long.toHexString(unaligned.address()) + " is not; allocate it with HostMemory.allocate",
                    e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> context.registerHost(page.asSlice(0, 0)));
        }
        MemorySegment dead;
        try (Arena arena = Arena.ofConfined()) {
            dead = HostMemory.allocate(arena, 4096);
        }
        assertThrows(IllegalStateException.class, () -> context.registerHost(dead));
    }

    @Test
    void slicesAreBoundsCheckedAndAddressed() {
        DeviceMemory view = memory.slice(100, 200);
        assertEquals(BASE + 100, view.address());
        assertEquals(200, view.byteSize());
        assertTrue(view.isView());
        assertFalse(memory.isView());
        DeviceMemory inner = view.slice(50, 150);
        assertEquals(BASE + 150, inner.address());
        assertEquals("view [150, +150) of device memory 0x7f2a00000000 (4096 bytes) on device 0", inner.toString());
        assertEquals(0, memory.slice(4096, 0).byteSize());
        IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> view.slice(100, 101));
        assertEquals("slice(100, 101) is out of bounds of view [100, +200) of device memory 0x7f2a00000000 "
                + "(4096 bytes) on device 0", e.getMessage());
        assertThrows(IndexOutOfBoundsException.class, () -> memory.slice(-1, 1));
        assertThrows(IndexOutOfBoundsException.class, () -> memory.slice(0, -1));
        assertThrows(IndexOutOfBoundsException.class, () -> memory.slice(1, Long.MAX_VALUE));
    }

    @Test
    void viewsCannotBeClosedOrExported() {
        DeviceMemory view = memory.slice(0, 10);
        IllegalStateException e = assertThrows(IllegalStateException.class, view::close);
        assertTrue(e.getMessage().startsWith("a view cannot be closed"), e.getMessage());
        assertTrue(view.isOpen());
        assertThrows(IllegalStateException.class, view::ipcHandle);
    }

    @Test
    void copySizesMustMatchExactly() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> memory.copyFromHost(MemorySegment.ofArray(new byte[100])));
        assertEquals("size mismatch: source host segment has 100 bytes, device memory 0x7f2a00000000 (4096 bytes) "
                + "on device 0 has 4096 (copy to or from a slice to move part of a buffer)", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> memory.copyToHost(MemorySegment.ofArray(new byte[4097])));
        assertThrows(IllegalArgumentException.class, () -> memory.copyFrom(memory.slice(0, 4095)));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment small = arena.allocate(10);
            assertThrows(IllegalArgumentException.class, () -> memory.copyFromHostAsync(small, stream));
            assertThrows(IllegalArgumentException.class, () -> memory.copyToHostAsync(small, stream));
        }
        assertThrows(IllegalArgumentException.class, () -> memory.copyFromAsync(memory.slice(1, 4095), stream));
    }

    @Test
    void asyncCopiesNeedNativeHostSegments() {
        MemorySegment heap = MemorySegment.ofArray(new byte[4096]);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> memory.copyFromHostAsync(heap, stream));
        assertTrue(e.getMessage().startsWith("copyFromHostAsync needs a native host segment"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> memory.copyToHostAsync(heap, stream));
    }

    @Test
    void readOnlyDestinationsAreRejected() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment readOnly = arena.allocate(4096).asReadOnly();
            assertThrows(IllegalArgumentException.class, () -> memory.copyToHost(readOnly));
            assertThrows(IllegalArgumentException.class, () -> memory.copyToHostAsync(readOnly, stream));
        }
    }

    @Test
    void emptyCopiesDoNotCallTheDriver() {
        DeviceMemory empty = memory.slice(10, 0);
        empty.copyFromHost(MemorySegment.ofArray(new byte[0]));
        empty.copyToHost(MemorySegment.ofArray(new byte[0]));
        empty.copyFrom(memory.slice(20, 0));
        empty.fill((byte) 1);
        try (Arena arena = Arena.ofConfined()) {
            empty.copyFromHostAsync(arena.allocate(0), stream);
        }
        assertEquals(0, empty.byteSize()); // reaching here means no call reached the (absent) driver
    }

    @Test
    void elapsedTimeNeedsTimingEvents() {
        CudaEvent timed = new CudaEvent(context, MemorySegment.ofAddress(0x3000), true);
        CudaEvent untimed = new CudaEvent(context, MemorySegment.ofAddress(0x4000), false);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () ->
                timed.elapsedMillisSince(untimed));
        assertEquals("elapsedMillisSince needs two events created with timing: event 0x4000 of device 0 was created "
                + "without", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> untimed.elapsedMillisSince(timed));
    }
}
