package dev.panamax.cuda;

import dev.panamax.bindings.cuda.cuda_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** A CUDA device ({@code CUdevice}), obtained from {@link Cuda#device(int)}. Queries need no context. */
public final class CudaDevice {
    private final int ordinal;
    private final int handle;

    CudaDevice(int ordinal, int handle) {
        this.ordinal = ordinal;
        this.handle = handle;
    }

    /** The ordinal it was obtained with. */
    public int ordinal() {
        return ordinal;
    }

    /** The {@code CUdevice} value. */
    public int handle() {
        return handle;
    }

    /** The product name, for example {@code NVIDIA H100 80GB HBM3} ({@code cuDeviceGetName}). */
    public String name() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment name = arena.allocate(256);
            CudaCalls.check(cuda_h.cuDeviceGetName(name, (int) name.byteSize(), handle),
                    "cuDeviceGetName(" + this + ")");
            return name.getString(0);
        }
    }

    /** The memory of the device in bytes ({@code cuDeviceTotalMem_v2}). */
    public long totalMemoryBytes() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment bytes = arena.allocate(ValueLayout.JAVA_LONG);
            CudaCalls.check(cuda_h.cuDeviceTotalMem_v2(bytes, handle), "cuDeviceTotalMem_v2(" + this + ")");
            return bytes.get(ValueLayout.JAVA_LONG, 0);
        }
    }

    /**
     * An attribute ({@code cuDeviceGetAttribute}).
     *
     * @param cuDeviceAttribute a {@code CUdevice_attribute}, for example
     *                          {@code cuda_h.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT()}
     */
    public int attribute(int cuDeviceAttribute) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = arena.allocate(ValueLayout.JAVA_INT);
            CudaCalls.check(cuda_h.cuDeviceGetAttribute(value, cuDeviceAttribute, handle),
                    "cuDeviceGetAttribute(" + cuDeviceAttribute + ", " + this + ")");
            return value.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /** The major compute capability, for example 9 on an H100. */
    public int computeCapabilityMajor() {
        return attribute(cuda_h.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR());
    }

    /** The minor compute capability, for example 0 on an H100. */
    public int computeCapabilityMinor() {
        return attribute(cuda_h.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR());
    }

    /**
     * Retains the device's primary context ({@code cuDevicePrimaryCtxRetain}); the returned object releases
     * it once, on {@link CudaContext#close()}. Each call retains once more: the driver counts the retains
     * and destroys the context when the last is released.
     */
    public CudaContext retainPrimaryContext() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment context = arena.allocate(ValueLayout.ADDRESS);
            CudaCalls.check(cuda_h.cuDevicePrimaryCtxRetain(context, handle), "cuDevicePrimaryCtxRetain(" + this + ")");
            return new CudaContext(this, context.get(ValueLayout.ADDRESS, 0));
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CudaDevice d && d.ordinal == ordinal && d.handle == handle;
    }

    @Override
    public int hashCode() {
        return 31 * ordinal + handle;
    }

    /** {@code device 0}; does not call the driver. */
    @Override
    public String toString() {
        return "device " + ordinal;
    }
}
