package dev.panamax.cuda;

import dev.panamax.bindings.cuda.cuda_h;
import dev.panamax.testing.GpuTest;
import dev.panamax.testing.GpuTestSupport;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@GpuTest
class CudaDeviceTest {

    @Test
    void describesTheDevice() {
        CudaDevice device = CudaTestDevice.device();
        assertTrue(Cuda.isAvailable());
        assertNull(Cuda.unavailabilityCause());
        assertTrue(Cuda.driverVersion() >= 12000, "driver CUDA version " + Cuda.driverVersion());
        assertEquals(GpuTestSupport.ORDINAL, device.ordinal());
        String name = device.name();
        assertFalse(name.isBlank());
        assertTrue(device.totalMemoryBytes() >= 1L << 30, device.totalMemoryBytes() + " bytes");
        assertTrue(device.computeCapabilityMajor() >= 3, "compute capability " + device.computeCapabilityMajor());
        assertTrue(device.computeCapabilityMinor() >= 0);
        assertEquals(device.computeCapabilityMajor(),
                device.attribute(cuda_h.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR()));
        assertTrue(device.attribute(cuda_h.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT()) > 0);
        assertEquals(32, device.attribute(cuda_h.CU_DEVICE_ATTRIBUTE_WARP_SIZE()));
        assertEquals(device, Cuda.device(GpuTestSupport.ORDINAL));
    }

    @Test
    void ordinalsBeyondTheCountAreRejected() {
        CudaTestDevice.device();
        int count = Cuda.deviceCount();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Cuda.device(count));
        assertEquals("no CUDA device " + count + ": " + count + " device(s) visible", e.getMessage());
    }

    @Test
    void driverErrorsAreNamedByTheDriver() {
        CudaDevice device = CudaTestDevice.device();
        CudaException e = assertThrows(CudaException.class, () -> device.attribute(-5));
        assertEquals("CUDA_ERROR_INVALID_VALUE", e.errorName());
        assertEquals(cuda_h.CUDA_ERROR_INVALID_VALUE(), e.code());
        assertEquals("cuDeviceGetAttribute(-5, device " + GpuTestSupport.ORDINAL + ")", e.call());
        assertTrue(e.getMessage().startsWith(e.call() + ": CUDA_ERROR_INVALID_VALUE (1): "), e.getMessage());
    }
}
