package dev.panamax.cuda;

import dev.panamax.bindings.cuda.cuda_h;
import dev.panamax.testing.GpuTest;
import dev.panamax.testing.GpuTestSupport;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@GpuTest
class CudaContextTest {

    private static MemorySegment current() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = arena.allocate(ValueLayout.ADDRESS);
            assertEquals(0, cuda_h.cuCtxGetCurrent(p));
            return p.get(ValueLayout.ADDRESS, 0);
        }
    }

    @Test
    void retainsAndReleasesThePrimaryContextOnce() {
        CudaContext context = CudaTestDevice.context();
        assertTrue(context.isOpen());
        assertFalse(context.handle().address() == 0);
        assertEquals(CudaTestDevice.device(), context.device());
        context.makeCurrent();
        assertEquals(context.handle().address(), current().address());
        context.synchronize();
        long free = context.freeMemoryBytes();
        assertTrue(free > 0 && free <= context.device().totalMemoryBytes(), free + " bytes free");
        context.close();
        assertFalse(context.isOpen());
        context.close(); // a second close does nothing
        IllegalStateException e = assertThrows(IllegalStateException.class, context::createStream);
        assertEquals("primary context of device " + GpuTestSupport.ORDINAL + " is closed", e.getMessage());
        assertThrows(IllegalStateException.class, () -> context.allocate(16));
        assertThrows(IllegalStateException.class, context::makeCurrent);
    }

    @Test
    void eachRetainIsReleasedByItsOwnClose() {
        try (CudaContext first = CudaTestDevice.context()) {
            CudaContext second = CudaTestDevice.device().retainPrimaryContext();
            assertEquals(first.handle().address(), second.handle().address());
            second.close();
            // The first retain still holds the context: it keeps working.
            try (DeviceMemory m = first.allocate(4096)) {
                m.fill((byte) 7);
            }
        }
    }

    @Test
    void anyThreadMayUseTheContext() throws Exception {
        try (CudaContext context = CudaTestDevice.context(); Arena arena = Arena.ofShared()) {
            DeviceMemory memory = context.allocate(1 << 20);
            MemorySegment host = arena.allocate(1 << 20);
            CudaTestDevice.fillPattern(host, 3);
            ExecutorService pool = Executors.newFixedThreadPool(2);
            try {
                // Fresh threads have no current context: each call must make its own current.
                pool.submit(() -> memory.copyFromHost(host)).get(60, TimeUnit.SECONDS);
                MemorySegment back = arena.allocate(1 << 20);
                pool.submit(() -> {
                    memory.copyToHost(back);
                    assertEquals(context.handle().address(), current().address());
                    return null;
                }).get(60, TimeUnit.SECONDS);
                CudaTestDevice.assertPattern(back, 3);
            } finally {
                pool.shutdownNow();
                assertTrue(pool.awaitTermination(60, TimeUnit.SECONDS));
            }
        }
    }

    @Test
    void closeClosesWhatTheContextOwns() {
        CudaContext context = CudaTestDevice.context();
        DeviceMemory memory = context.allocate(1 << 20);
        DeviceMemory view = memory.slice(0, 16);
        PinnedMemory pinned = context.allocatePinned(4096);
        CudaStream stream = context.createStream();
        CudaEvent event = context.createEvent(false);
        DeviceMemory closedFirst = context.allocate(4096);
        closedFirst.close();
        context.close();
        assertFalse(memory.isOpen());
        assertFalse(view.isOpen());
        assertFalse(pinned.isOpen());
        assertFalse(stream.isOpen());
        assertFalse(event.isOpen());
        assertThrows(IllegalStateException.class, () -> pinned.segment().get(ValueLayout.JAVA_BYTE, 0));
        memory.close(); // already closed by the context: nothing happens
        stream.close();
        event.close();
        pinned.close();
    }
}
