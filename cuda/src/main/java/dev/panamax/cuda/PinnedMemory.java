package dev.panamax.cuda;

import dev.panamax.bindings.cuda.cuda_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static dev.panamax.cuda.CudaCalls.hex;

/**
 * Page-locked host memory: allocated by {@link CudaContext#allocatePinned} or an existing segment registered by
 * {@link CudaContext#registerHost}. Freed ({@code cuMemFreeHost}) or unregistered ({@code cuMemHostUnregister})
 * exactly once, by the first of {@link #close()} and its context's close; closing again does nothing.
 *
 * <p>{@link #segment()} belongs to a shared arena this object closes first: after {@link #close()} accessing
 * it throws {@link IllegalStateException} (a registered segment's own arena is not affected).
 */
public final class PinnedMemory implements AutoCloseable {
    private final CudaContext context;
    private final long address;
    private final long byteSize;
    private final boolean registered;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment segment;
    private boolean closed;

    PinnedMemory(CudaContext context, long address, long byteSize, boolean registered) {
        this.context = context;
        this.address = address;
        this.byteSize = byteSize;
        this.registered = registered;
        this.segment = MemorySegment.ofAddress(address).reinterpret(byteSize, arena, null);
    }

    /** The memory, accessible until {@link #close()}. */
    public MemorySegment segment() {
        return segment;
    }

    /** The size in bytes. */
    public long byteSize() {
        return byteSize;
    }

    /** Whether it was registered ({@link CudaContext#registerHost}) rather than allocated. */
    public boolean isRegistered() {
        return registered;
    }

    /** Whether it has not been closed. */
    public synchronized boolean isOpen() {
        return !closed;
    }

    /**
     * Closes {@link #segment()}'s arena, then frees or unregisters the memory. Does nothing when already closed.
     *
     * @throws IllegalStateException when the segment is in use by a native call on another thread (then
     *                               nothing is closed)
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        arena.close(); // first: if the segment is in use, this throws and nothing changes
        closed = true;
        context.forget(this);
        context.setCurrent();
        MemorySegment p = MemorySegment.ofAddress(address);
        if (registered) {
            CudaCalls.check(cuda_h.cuMemHostUnregister(p), "cuMemHostUnregister(" + this + ")");
        } else {
            CudaCalls.check(cuda_h.cuMemFreeHost(p), "cuMemFreeHost(" + this + ")");
        }
    }

    @Override
    public String toString() {
        return (registered ? "registered" : "pinned") + " host memory " + hex(address) + " (" + byteSize + " bytes)";
    }
}
