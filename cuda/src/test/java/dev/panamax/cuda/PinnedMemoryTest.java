package dev.panamax.cuda;

import dev.panamax.memory.HostMemory;
import dev.panamax.testing.GpuTest;
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
class PinnedMemoryTest {

    @Test
    void allocatedPinnedMemoryRoundTrips() {
        long n = 8 * MIB + 3;
        try (CudaContext context = CudaTestDevice.context()) {
            PinnedMemory src = context.allocatePinned(n);
            PinnedMemory dst = context.allocatePinned(n);
            assertEquals(n, src.byteSize());
            assertEquals(n, src.segment().byteSize());
            assertFalse(src.isRegistered());
            CudaTestDevice.fillPattern(src.segment(), 6);
            try (DeviceMemory memory = context.allocate(n)) {
                memory.copyFromHost(src.segment());
                memory.copyToHost(dst.segment());
            }
            CudaTestDevice.assertPattern(dst.segment(), 6);
            MemorySegment segment = src.segment();
            src.close();
            assertFalse(src.isOpen());
            assertThrows(IllegalStateException.class, () -> segment.get(ValueLayout.JAVA_BYTE, 0));
            src.close(); // closing twice does nothing
            dst.close();
        }
    }

    @Test
    void registeredHostMemoryRoundTripsAndStaysTheSegments() {
        long n = 4 * MIB + 4096;
        try (CudaContext context = CudaTestDevice.context(); Arena arena = Arena.ofConfined()) {
            MemorySegment host = HostMemory.allocate(arena, n);
            CudaTestDevice.fillPattern(host, 7);
            PinnedMemory pinned = context.registerHost(host);
            assertTrue(pinned.isRegistered());
            assertEquals(host.address(), pinned.segment().address());
            assertEquals(n, pinned.byteSize());
            try (DeviceMemory memory = context.allocate(n); CudaStream stream = context.createStream()) {
                memory.copyFromHostAsync(pinned.segment(), stream);
                stream.synchronize();
                pinned.segment().fill((byte) 0);
                memory.copyToHostAsync(pinned.segment(), stream);
                stream.synchronize();
            }
            CudaTestDevice.assertPattern(host, 7);
            pinned.close();
            assertThrows(IllegalStateException.class, () -> pinned.segment().get(ValueLayout.JAVA_BYTE, 0));
            // Unregistering leaves the memory with its arena.
            assertEquals(CudaTestDevice.patternByte(5, 7), host.get(ValueLayout.JAVA_BYTE, 5));
            pinned.close();
        }
    }

    @Test
    void registeringTwiceIsTheDriversError() {
        try (CudaContext context = CudaTestDevice.context(); Arena arena = Arena.ofConfined()) {
            MemorySegment host = HostMemory.allocate(arena, 64 * 1024);
            try (PinnedMemory ignored = context.registerHost(host)) {
                CudaException e = assertThrows(CudaException.class, () -> context.registerHost(host));
                assertEquals("CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", e.errorName());
            }
        }
    }
}
