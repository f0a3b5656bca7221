package dev.panamax.cuda;

import dev.panamax.bindings.cuda.CUipcMemHandle;
import dev.panamax.bindings.cuda.cuda_h;
import dev.panamax.memory.internal.Closer;
import dev.panamax.memory.HostMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static dev.panamax.cuda.CudaCalls.hex;

/**
 * A retained primary context of a device, from {@link CudaDevice#retainPrimaryContext()}.
 *
 * <p>Every method that needs a context makes this one current on the calling thread first
 * ({@code cuCtxSetCurrent}), so a context and what it created may be used from any thread.
 *
 * <p>It owns the streams, events, device memory and pinned memory created from it, and the
 * {@linkplain ReductionKernels#load kernels loaded} into it. {@link #close()} waits for the device, closes them
 * (events, streams, kernels, device memory, pinned memory) and then releases the primary context, once; closing
 * again does nothing.
 */
public final class CudaContext implements AutoCloseable {
    private final CudaDevice device;
    private final MemorySegment handle;
    private final Set<CudaEvent> events = ConcurrentHashMap.newKeySet();
    private final Set<CudaStream> streams = ConcurrentHashMap.newKeySet();
    private final Set<DeviceMemory> memory = ConcurrentHashMap.newKeySet();
    private final Set<PinnedMemory> pinned = ConcurrentHashMap.newKeySet();
    private final Set<ReductionKernels> kernels = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    CudaContext(CudaDevice device, MemorySegment handle) {
        this.device = device;
        this.handle = handle;
    }

    /** The device whose primary context this is. */
    public CudaDevice device() {
        return device;
    }

    /** The {@code CUcontext}. */
    public MemorySegment handle() {
        return handle;
    }

    /** Whether {@link #close()} has not been called. */
    public boolean isOpen() {
        return !closed;
    }

    /** Makes this context current on the calling thread ({@code cuCtxSetCurrent}). */
    public void makeCurrent() {
        requireOpen();
        setCurrent();
    }

    /** Waits until the device has finished all work of this context ({@code cuCtxSynchronize}). */
    public void synchronize() {
        requireOpen();
        setCurrent();
        CudaCalls.check(cuda_h.cuCtxSynchronize(), "cuCtxSynchronize(" + this + ")");
    }

    /** The free device memory in bytes ({@code cuMemGetInfo_v2}). */
    public long freeMemoryBytes() {
        requireOpen();
        setCurrent();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment free = arena.allocate(ValueLayout.JAVA_LONG);
            MemorySegment total = arena.allocate(ValueLayout.JAVA_LONG);
            CudaCalls.check(cuda_h.cuMemGetInfo_v2(free, total), "cuMemGetInfo_v2(" + this + ")");
            return free.get(ValueLayout.JAVA_LONG, 0);
        }
    }

    /**
     * A new stream ({@code cuStreamCreate}, {@code CU_STREAM_NON_BLOCKING}): it does not wait for the legacy
     * default stream, which the synchronous copies use, nor they for it. Synchronize the stream before
     * mixing synchronous and asynchronous operations on the same memory.
     */
    public CudaStream createStream() {
        synchronized (this) {
            requireOpen();
            setCurrent();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment p = arena.allocate(ValueLayout.ADDRESS);
                CudaCalls.check(cuda_h.cuStreamCreate(p, cuda_h.CU_STREAM_NON_BLOCKING()),
                        "cuStreamCreate(CU_STREAM_NON_BLOCKING, " + this + ")");
                CudaStream stream = new CudaStream(this, p.get(ValueLayout.ADDRESS, 0));
                streams.add(stream);
                return stream;
            }
        }
    }

    /**
     * A new event ({@code cuEventCreate}).
     *
     * @param timing whether it records time ({@link CudaEvent#elapsedMillisSince}); events without timing
     *               are cheaper to record and wait for
     */
    public CudaEvent createEvent(boolean timing) {
        synchronized (this) {
            requireOpen();
            setCurrent();
            int flags = timing ? cuda_h.CU_EVENT_DEFAULT() : cuda_h.CU_EVENT_DISABLE_TIMING();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment p = arena.allocate(ValueLayout.ADDRESS);
                CudaCalls.check(cuda_h.cuEventCreate(p, flags), "cuEventCreate(" + flags + ", " + this + ")");
                CudaEvent event = new CudaEvent(this, p.get(ValueLayout.ADDRESS, 0), timing);
                events.add(event);
                return event;
            }
        }
    }

    /**
     * Allocates device memory ({@code cuMemAlloc_v2}); its contents are undefined.
     *
     * @throws IllegalArgumentException when {@code byteSize <= 0} (the driver refuses empty allocations;
     *                                  a zero-length {@link DeviceMemory#slice} is allowed)
     * @throws CudaException            when the driver fails, for example {@code CUDA_ERROR_OUT_OF_MEMORY}
     */
    public DeviceMemory allocate(long byteSize) {
        if (byteSize <= 0) {
            throw new IllegalArgumentException("byteSize must be > 0: " + byteSize);
        }
        synchronized (this) {
            requireOpen();
            setCurrent();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment p = arena.allocate(ValueLayout.JAVA_LONG);
                CudaCalls.check(cuda_h.cuMemAlloc_v2(p, byteSize), "cuMemAlloc_v2(" + byteSize + ")");
                DeviceMemory m = DeviceMemory.allocated(this, p.get(ValueLayout.JAVA_LONG, 0), byteSize, false);
                memory.add(m);
                return m;
            }
        }
    }

    /**
     * Allocates page-locked host memory that every context can use ({@code cuMemHostAlloc},
     * {@code CU_MEMHOSTALLOC_PORTABLE}); its contents are undefined.
     *
     * @throws IllegalArgumentException when {@code byteSize <= 0}
     */
    public PinnedMemory allocatePinned(long byteSize) {
        if (byteSize <= 0) {
            throw new IllegalArgumentException("byteSize must be > 0: " + byteSize);
        }
        synchronized (this) {
            requireOpen();
            setCurrent();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment p = arena.allocate(ValueLayout.ADDRESS);
                CudaCalls.check(cuda_h.cuMemHostAlloc(p, byteSize, cuda_h.CU_MEMHOSTALLOC_PORTABLE()),
                        "cuMemHostAlloc(" + byteSize + ", CU_MEMHOSTALLOC_PORTABLE)");
                PinnedMemory m = new PinnedMemory(this, p.get(ValueLayout.ADDRESS, 0).address(), byteSize, false);
                pinned.add(m);
                return m;
            }
        }
    }

    /**
     * Page-locks an existing native segment ({@code cuMemHostRegister_v2}, {@code CU_MEMHOSTREGISTER_PORTABLE})
     * so that copies to and from it run at full speed and asynchronously. The memory stays the segment's:
     * close the returned object (or this context) before the segment's arena.
     *
     * @throws IllegalArgumentException when the segment is not native, empty, or does not start on a page
     *                                  boundary ({@link HostMemory#allocate} gives page-aligned segments)
     * @throws IllegalStateException    when the segment's arena is closed
     */
    public PinnedMemory registerHost(MemorySegment segment) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException("registerHost needs a native segment, not a heap segment: " + segment);
        }
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("registerHost: the segment's arena is closed: " + segment);
        }
        if (segment.byteSize() == 0) {
            throw new IllegalArgumentException("registerHost needs a non-empty segment: " + segment);
        }
        if (segment.address() % HostMemory.PAGE_SIZE != 0) {
            throw new IllegalArgumentException("registerHost needs a page-aligned segment (" + HostMemory.PAGE_SIZE
                    + " bytes): address " + hex(segment.address()) + " is not; allocate it with HostMemory.allocate");
        }
        synchronized (this) {
            requireOpen();
            setCurrent();
            CudaCalls.check(cuda_h.cuMemHostRegister_v2(segment, segment.byteSize(),
                            cuda_h.CU_MEMHOSTREGISTER_PORTABLE()),
                    "cuMemHostRegister_v2(" + hex(segment.address()) + ", " + segment.byteSize()
                            + ", CU_MEMHOSTREGISTER_PORTABLE)");
            PinnedMemory m = new PinnedMemory(this, segment.address(), segment.byteSize(), true);
            pinned.add(m);
            return m;
        }
    }

    /**
     * Maps device memory exported by another process ({@code cuIpcOpenMemHandle_v2},
     * {@code CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS}). Its size is that of the exported allocation as the driver
     * reports it ({@code cuMemGetAddressRange_v2}), which may be rounded up; closing it unmaps it
     * ({@code cuIpcCloseMemHandle}). A process cannot open its own handles.
     */
    public DeviceMemory openIpc(IpcMemoryHandle handle) {
        return open(handle, -1);
    }

    /**
     * Like {@link #openIpc(IpcMemoryHandle)}, with the size known to the caller.
     *
     * @throws IllegalArgumentException when {@code byteSize} is not positive or larger than the mapped allocation
     */
    public DeviceMemory openIpc(IpcMemoryHandle handle, long byteSize) {
        if (byteSize <= 0) {
            throw new IllegalArgumentException("byteSize must be > 0: " + byteSize);
        }
        return open(handle, byteSize);
    }

    /** {@code byteSize} -1: all that is mapped. */
    private DeviceMemory open(IpcMemoryHandle handle, long byteSize) {
        if (handle == null) {
            throw new NullPointerException("handle");
        }
        synchronized (this) {
            requireOpen();
            setCurrent();
            long address;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment p = arena.allocate(ValueLayout.JAVA_LONG);
                MemorySegment h = arena.allocate(CUipcMemHandle.layout());
                h.copyFrom(MemorySegment.ofArray(handle.bytes()));
                CudaCalls.check(cuda_h.cuIpcOpenMemHandle_v2(p, h, cuda_h.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS()),
                        "cuIpcOpenMemHandle_v2(" + handle + ")");
                address = p.get(ValueLayout.JAVA_LONG, 0);
            }
            long mapped;
            try {
                long[] base = new long[1];
                mapped = CudaCalls.allocationRange(address, base) - (address - base[0]);
            } catch (RuntimeException | LinkageError e) {
                cuda_h.cuIpcCloseMemHandle(address);
                throw e;
            }
            if (byteSize > mapped) {
                cuda_h.cuIpcCloseMemHandle(address);
                throw new IllegalArgumentException("byteSize " + byteSize + " is larger than the " + mapped
                        + " bytes mapped by " + handle);
            }
            DeviceMemory m = DeviceMemory.allocated(this, address, byteSize == -1 ? mapped : byteSize, true);
            memory.add(m);
            return m;
        }
    }

    /** Waits for the device, closes what this context owns and releases the primary context, once. */
    @Override
    public void close() {
        List<CudaEvent> e;
        List<CudaStream> s;
        List<ReductionKernels> k;
        List<DeviceMemory> m;
        List<PinnedMemory> p;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            e = List.copyOf(events);
            s = List.copyOf(streams);
            k = List.copyOf(kernels);
            m = List.copyOf(memory);
            p = List.copyOf(pinned);
        }
        Closer closer = new Closer();
        // In-flight copies may still use the memory about to be freed.
        closer.run(() -> {
            setCurrent();
            CudaCalls.check(cuda_h.cuCtxSynchronize(), "cuCtxSynchronize(" + this + ")");
        });
        e.forEach(x -> closer.run(x::close));
        s.forEach(x -> closer.run(x::close));
        k.forEach(x -> closer.run(x::close));
        m.forEach(x -> closer.run(x::close));
        p.forEach(x -> closer.run(x::close));
        closer.run(() -> CudaCalls.check(cuda_h.cuDevicePrimaryCtxRelease_v2(device.handle()),
                "cuDevicePrimaryCtxRelease_v2(" + device + ")"));
        closer.rethrow();
    }

    void setCurrent() {
        CudaCalls.setCurrent(handle);
    }

    void requireOpen() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    void forget(CudaEvent event) {
        events.remove(event);
    }

    void forget(CudaStream stream) {
        streams.remove(stream);
    }

    void forget(DeviceMemory m) {
        memory.remove(m);
    }

    void forget(PinnedMemory m) {
        pinned.remove(m);
    }

    /** Takes ownership of kernels loaded into this context; the caller holds this context's lock. */
    void adopt(ReductionKernels k) {
        kernels.add(k);
    }

    void forget(ReductionKernels k) {
        kernels.remove(k);
    }

    @Override
    public String toString() {
        return "primary context of " + device;
    }
}
