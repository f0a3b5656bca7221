package dev.panamax.bindings;

import dev.panamax.bindings.cuda.CUipcMemHandle;
import dev.panamax.bindings.cuda.cuda_h;
import dev.panamax.bindings.cuda.support.CudaMacros;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class CudaBindingsTest {

    @Test
    void constantsAndLayoutsWorkWithoutLoadingTheLibrary() {
        assertEquals(0, cuda_h.CUDA_SUCCESS());
        assertEquals(100, cuda_h.CUDA_ERROR_NO_DEVICE());
        assertEquals(75, cuda_h.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR());
        assertEquals(1, cuda_h.CU_MEMHOSTALLOC_PORTABLE());
        assertEquals(1, cuda_h.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS());
        assertEquals(1, cuda_h.CU_STREAM_NON_BLOCKING());
        assertEquals(2, cuda_h.CU_EVENT_DISABLE_TIMING());
        assertEquals(13000, cuda_h.CUDA_VERSION());
        assertEquals(64, CUipcMemHandle.sizeof());
        assertEquals(1L, CudaMacros.CU_STREAM_LEGACY.address());
    }

    @Test
    void missingLibraryIsReportedCleanly() {
        assumeFalse(NativeLibrary.CUDA.isAvailable(), "libcuda.so.1 is available here");
        String cause = NativeLibrary.CUDA.unavailabilityCause();
        assertTrue(cause.contains("libcuda.so.1") && cause.contains("library not available"), cause);
        Throwable t = assertThrows(Throwable.class, () -> cuda_h.cuInit(0));
        String text = Throwables.chain(t);
        assertTrue(text.contains("cuInit") && text.contains("libcuda.so.1"), text);
        System.out.println("cuda: " + t.getMessage());
    }

    @Test
    @Tag("gpu")
    void initAndCountDevices() {
        assumeTrue(NativeLibrary.CUDA.isAvailable(), NativeLibrary.CUDA.unavailabilityCause());
        try (Arena arena = Arena.ofConfined()) {
            int rc = cuda_h.cuInit(0);
            assumeTrue(rc != cuda_h.CUDA_ERROR_NO_DEVICE(), "no CUDA device");
            assertEquals(cuda_h.CUDA_SUCCESS(), rc, "cuInit");
            MemorySegment version = arena.allocate(ValueLayout.JAVA_INT);
            assertEquals(0, cuda_h.cuDriverGetVersion(version));
            MemorySegment count = arena.allocate(ValueLayout.JAVA_INT);
            assertEquals(0, cuda_h.cuDeviceGetCount(count));
            System.out.println("cuda: driver " + version.get(ValueLayout.JAVA_INT, 0) + ", "
                    + count.get(ValueLayout.JAVA_INT, 0) + " device(s)");
        }
    }
}
