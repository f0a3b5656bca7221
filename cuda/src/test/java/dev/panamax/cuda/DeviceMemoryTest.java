package dev.panamax.cuda;

import dev.panamax.memory.HostMemory;
import dev.panamax.testing.GpuTest;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static dev.panamax.cuda.CudaTestDevice.MIB;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@GpuTest
class DeviceMemoryTest {

    @ParameterizedTest
    @ValueSource(longs = {1, 4097, 64 << 20})
    void roundTripsHostToDeviceToDeviceToHost(long byteSize) {
        try (CudaContext context = CudaTestDevice.context(); Arena arena = Arena.ofConfined()) {
            MemorySegment src = HostMemory.allocate(arena, byteSize);
            CudaTestDevice.fillPattern(src, 1);
            try (DeviceMemory a = context.allocate(byteSize); DeviceMemory b = context.allocate(byteSize)) {
                assertEquals(byteSize, a.byteSize());
                assertTrue(a.address() != 0 && a.address() != b.address());
                a.copyFromHost(src);
                b.copyFrom(a);
                MemorySegment dst = HostMemory.allocate(arena, byteSize);
                b.copyToHost(dst);
                CudaTestDevice.assertPattern(dst, 1);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 4097, 64 << 20})
    void heapSegmentsAreCopiedToo(long byteSize) {
        try (CudaContext context = CudaTestDevice.context(); DeviceMemory memory = context.allocate(byteSize)) {
            MemorySegment src = MemorySegment.ofArray(new byte[(int) byteSize]);
            CudaTestDevice.fillPattern(src, 2);
            memory.copyFromHost(src);
            MemorySegment dst = MemorySegment.ofArray(new byte[(int) byteSize]);
            memory.copyToHost(dst);
            CudaTestDevice.assertPattern(dst, 2);
        }
    }

    @Test
    void fillSetsEveryByte() {
        long n = 3 * MIB + 5;
        try (CudaContext context = CudaTestDevice.context(); Arena arena = Arena.ofConfined();
             DeviceMemory memory = context.allocate(n)) {
            memory.fill((byte) 0xA5);
            MemorySegment dst = arena.allocate(n);
            memory.copyToHost(dst);
            CudaTestDevice.assertAll(dst, (byte) 0xA5);
        }
    }

    @Test
    void slicesReadAndWriteTheirPartOnly() {
        long n = 10_000;
        try (CudaContext context = CudaTestDevice.context(); Arena arena = Arena.ofConfined();
             DeviceMemory memory = context.allocate(n)) {
            MemorySegment whole = arena.allocate(n);
            CudaTestDevice.fillPattern(whole, 4);
            memory.copyFromHost(whole);

            DeviceMemory view = memory.slice(1234, 5000);
            MemorySegment part = arena.allocate(5000);
            view.copyToHost(part);
            assertEquals(-1, part.mismatch(whole.asSlice(1234, 5000)));

            view.slice(100, 50).fill((byte) 9);
            MemorySegment back = arena.allocate(n);
            memory.copyToHost(back);
            for (long i = 0; i < n; i++) {
                byte expected = i >= 1334 && i < 1384 ? 9 : CudaTestDevice.patternByte(i, 4);
                assertEquals(expected, back.get(ValueLayout.JAVA_BYTE, i), "byte " + i);
            }
            memory.slice(0, 100).copyFrom(memory.slice(n - 100, 100));
            MemorySegment head = arena.allocate(100);
            memory.slice(0, 100).copyToHost(head);
            assertEquals(-1, head.mismatch(whole.asSlice(n - 100, 100)));
        }
    }

    @Test
    void closedMemoryIsNamedWhenUsed() {
        try (CudaContext context = CudaTestDevice.context(); Arena arena = Arena.ofConfined()) {
            DeviceMemory memory = context.allocate(4096);
            DeviceMemory view = memory.slice(16, 32);
            String name = memory.toString();
            memory.close();
            assertFalse(memory.isOpen());
            assertFalse(view.isOpen());
            memory.close(); // closing twice does nothing
            MemorySegment host = arena.allocate(4096);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> memory.copyToHost(host));
            assertEquals(name + " is closed", e.getMessage());
            assertTrue(name.startsWith("device memory 0x" + Long.toHexString(memory.address()) + " (4096 bytes)"),
                    name);
            IllegalStateException v = assertThrows(IllegalStateException.class, () -> view.fill((byte) 0));
            assertTrue(v.getMessage().startsWith("view [16, +32) of " + name), v.getMessage());
            assertThrows(IllegalStateException.class, () -> memory.copyFromHost(host));
            assertThrows(IllegalStateException.class, () -> memory.slice(0, 1));
            assertThrows(IllegalStateException.class, memory::ipcHandle);
            try (DeviceMemory other = context.allocate(4096)) {
                assertThrows(IllegalStateException.class, () -> other.copyFrom(memory));
            }
        }
    }

    @Test
    void tooLargeAllocationsFailWithTheDriversError() {
        try (CudaContext context = CudaTestDevice.context()) {
            long tooMuch = context.device().totalMemoryBytes() * 4;
            CudaException e = assertThrows(CudaException.class, () -> context.allocate(tooMuch));
            assertEquals("CUDA_ERROR_OUT_OF_MEMORY", e.errorName());
            assertEquals("cuMemAlloc_v2(" + tooMuch + ")", e.call());
        }
    }

    @Test
    void closingReturnsTheMemory() {
        long size = 256 * MIB;
        try (CudaContext context = CudaTestDevice.context()) {
            try (DeviceMemory warmUp = context.allocate(size)) { // the first allocation may set up driver state
                warmUp.fill((byte) 0);
            }
            long before = context.freeMemoryBytes();
            for (int i = 0; i < 10; i++) {
                DeviceMemory m = context.allocate(size);
                long during = context.freeMemoryBytes();
                assertTrue(before - during >= size - 16 * MIB,
                        "allocating " + size + " bytes took only " + (before - during) + " from the free memory");
                m.close();
            }
            long after = context.freeMemoryBytes();
            assertTrue(before - after < 128 * MIB, "free memory went from " + before + " to " + after
                    + " bytes after 10 allocations of " + size + " bytes were closed");
        }
    }
}
