package dev.panamax.cuda;

import dev.panamax.testing.GpuTest;
import dev.panamax.testing.GpuTestSupport;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * The device of the tests tagged "gpu" ({@link GpuTest}): {@link GpuTestSupport#ORDINAL} (0, or
 * PANAMAX_CUDA_DEVICE), skipping with the reason when there is no libcuda, no such device or no NCCL, or
 * failing instead under PANAMAX_REQUIRE_GPU=1 or PANAMAX_REQUIRE_NCCL=1 (the rule of {@link GpuTestSupport});
 * and byte patterns that show whether a copy moved the right bytes.
 */
final class CudaTestDevice {
    static final long MIB = 1L << 20;

    private CudaTestDevice() {
    }

    static CudaDevice device() {
        if (!Cuda.isAvailable()) {
            GpuTestSupport.gpuMissing("no CUDA: " + Cuda.unavailabilityCause().getMessage());
        }
        int count = Cuda.deviceCount();
        if (count <= GpuTestSupport.ORDINAL) {
            GpuTestSupport.gpuMissing("no CUDA device " + GpuTestSupport.ORDINAL + " (" + count + " visible)");
        }
        return Cuda.device(GpuTestSupport.ORDINAL);
    }

    static CudaContext context() {
        return device().retainPrimaryContext();
    }

    /**
     * The context of the test device, skipping also when NCCL is not available (no libnccl.so.2; point
     * PANAMAX_LIBRARY_NCCL at the one in the Python package nvidia-nccl-cu13). PANAMAX_REQUIRE_NCCL=1 makes
     * that reason a failure.
     */
    static CudaContext ncclContext() {
        CudaDevice device = device();
        if (!Nccl.isAvailable()) {
            GpuTestSupport.ncclMissing("no NCCL: " + Nccl.unavailabilityCause().getMessage());
        }
        return device.retainPrimaryContext();
    }

    /** The byte at {@code index} of pattern {@code seed}: not periodic, so shifted data does not match. */
    static byte patternByte(long index, int seed) {
        return (byte) ((index * 0x9E3779B97F4A7C15L + seed * 0x632BE59BD9B4E019L) >>> 56);
    }

    static void fillPattern(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(ValueLayout.JAVA_BYTE, i, patternByte(i, seed));
        }
    }

    /** The first index where {@code s} differs from pattern {@code seed}, or -1. */
    static long firstMismatch(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(ValueLayout.JAVA_BYTE, i) != patternByte(i, seed)) {
                return i;
            }
        }
        return -1;
    }

    /** Checks every byte of {@code s} against pattern {@code seed}. */
    static void assertPattern(MemorySegment s, int seed) {
        long i = firstMismatch(s, seed);
        if (i >= 0) {
            fail("byte " + i + " of " + s.byteSize() + ": expected " + patternByte(i, seed) + ", got "
                    + s.get(ValueLayout.JAVA_BYTE, i));
        }
    }

    /** Checks that every byte of {@code s} is {@code value}. */
    static void assertAll(MemorySegment s, byte value) {
        for (long i = 0; i < s.byteSize(); i++) {
            byte b = s.get(ValueLayout.JAVA_BYTE, i);
            if (b != value) {
                fail("byte " + i + " of " + s.byteSize() + ": expected " + value + ", got " + b);
            }
        }
    }
}
