package dev.panamax.cuda;

import dev.panamax.memory.HostMemory;
import dev.panamax.testing.GpuTest;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static dev.panamax.cuda.CudaTestDevice.MIB;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@GpuTest
class AsyncCopyTest {

    @Test
    void copiesOnAStreamAreTimedByEvents() {
        long n = 64 * MIB;
        try (CudaContext context = CudaTestDevice.context();
             CudaStream stream = context.createStream();
             CudaEvent start = context.createEvent(true);
             CudaEvent end = context.createEvent(true);
             PinnedMemory src = context.allocatePinned(n);
             PinnedMemory dst = context.allocatePinned(n);
             DeviceMemory a = context.allocate(n);
             DeviceMemory b = context.allocate(n)) {
            assertFalse(stream.handle().address() == 0);
            CudaTestDevice.fillPattern(src.segment(), 8);
            start.record(stream);
            a.copyFromHostAsync(src.segment(), stream);
            b.copyFromAsync(a, stream);
            b.copyToHostAsync(dst.segment(), stream);
            end.record(stream);
            end.synchronize();
            assertTrue(stream.isIdle());
            float millis = end.elapsedMillisSince(start);
            // Three copies of 64 MiB take some time on any device, and far less than a minute.
            assertTrue(millis > 0 && millis < 60_000, millis + " ms");
            CudaTestDevice.assertPattern(dst.segment(), 8);
        }
    }

    @Test
    void pageableNativeSegmentsWorkAsynchronously() {
        long n = 5 * MIB + 1;
        try (CudaContext context = CudaTestDevice.context(); Arena arena = Arena.ofConfined();
             CudaStream stream = context.createStream();
             DeviceMemory memory = context.allocate(n)) {
            MemorySegment src = HostMemory.allocate(arena, n);
            MemorySegment dst = HostMemory.allocate(arena, n);
            CudaTestDevice.fillPattern(src, 9);
            memory.copyFromHostAsync(src, stream);
            memory.copyToHostAsync(dst, stream);
            stream.synchronize();
            assertTrue(stream.isIdle());
            CudaTestDevice.assertPattern(dst, 9);
        }
    }

    @Test
    void closedStreamsAndEventsAreRefused() {
        try (CudaContext context = CudaTestDevice.context(); DeviceMemory memory = context.allocate(4096);
             Arena arena = Arena.ofConfined()) {
            CudaStream stream = context.createStream();
            CudaEvent event = context.createEvent(false);
            stream.close();
            stream.close(); // closing twice does nothing
            event.close();
            event.close();
            MemorySegment host = arena.allocate(4096);
            assertThrows(IllegalStateException.class, () -> memory.copyFromHostAsync(host, stream));
            assertThrows(IllegalStateException.class, stream::synchronize);
            assertThrows(IllegalStateException.class, stream::handle);
            assertThrows(IllegalStateException.class, event::synchronize);
        }
    }
}
