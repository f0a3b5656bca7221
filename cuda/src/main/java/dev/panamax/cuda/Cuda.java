package dev.panamax.cuda;

import dev.panamax.bindings.NativeLibrary;
import dev.panamax.bindings.cuda.cuda_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Entry point: is CUDA there, which devices are there.
 *
 * <p>libcuda.so.1 is loaded and {@code cuInit(0)} called once, lazily, on the first use of this class
 * (thread-safe). CUDA is available when both succeed; otherwise {@link #isAvailable()} is false,
 * {@link #unavailabilityCause()} says why (the missing library, or the failed {@code cuInit} as a
 * {@link CudaException}, for example {@code CUDA_ERROR_NO_DEVICE}), and the other methods throw
 * {@link IllegalStateException} with that cause.
 */
public final class Cuda {
    private Cuda() {
    }

    /** The outcome of loading the library and {@code cuInit(0)}, computed once on first use. */
    private static final class Init {
        static final Throwable CAUSE = initialize();

        private static Throwable initialize() {
            if (!NativeLibrary.CUDA.isAvailable()) {
                return new UnsatisfiedLinkError(NativeLibrary.CUDA.unavailabilityCause());
            }
            try {
                int rc = cuda_h.cuInit(0);
                return rc == 0 ? null : CudaCalls.error("cuInit(0)", rc);
            } catch (LinkageError | RuntimeException e) {
                return e;
            }
        }
    }

    /** Whether libcuda can be loaded and {@code cuInit} succeeded. */
    public static boolean isAvailable() {
        return Init.CAUSE == null;
    }

    /**
     * Why CUDA is not available: an {@link UnsatisfiedLinkError} naming libcuda.so.1 (and the setting that
     * would point at it), or the {@link CudaException} of {@code cuInit}; {@code null} when it is available.
     */
    public static Throwable unavailabilityCause() {
        return Init.CAUSE;
    }

    /** The driver's CUDA version, {@code 1000 * major + 10 * minor} ({@code cuDriverGetVersion}), e.g. 13000. */
    public static int driverVersion() {
        requireAvailable();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment version = arena.allocate(ValueLayout.JAVA_INT);
            CudaCalls.check(cuda_h.cuDriverGetVersion(version), "cuDriverGetVersion");
            return version.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /** The number of CUDA devices visible to this process ({@code cuDeviceGetCount}). */
    public static int deviceCount() {
        requireAvailable();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(ValueLayout.JAVA_INT);
            CudaCalls.check(cuda_h.cuDeviceGetCount(count), "cuDeviceGetCount");
            return count.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /**
     * The device with this ordinal ({@code cuDeviceGet}).
     *
     * @throws IllegalArgumentException when the ordinal is negative or not below {@link #deviceCount()}
     * @throws IllegalStateException    when CUDA is not available
     */
    public static CudaDevice device(int ordinal) {
        if (ordinal < 0) {
            throw new IllegalArgumentException("device ordinal must be >= 0: " + ordinal);
        }
        int count = deviceCount();
        if (ordinal >= count) {
            throw new IllegalArgumentException("no CUDA device " + ordinal + ": " + count + " device(s) visible");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment device = arena.allocate(ValueLayout.JAVA_INT);
            CudaCalls.check(cuda_h.cuDeviceGet(device, ordinal), "cuDeviceGet(" + ordinal + ")");
            return new CudaDevice(ordinal, device.get(ValueLayout.JAVA_INT, 0));
        }
    }

    static void requireAvailable() {
        Throwable cause = Init.CAUSE;
        if (cause != null) {
            throw new IllegalStateException("CUDA is not available: " + cause.getMessage(), cause);
        }
    }
}
