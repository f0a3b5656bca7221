package dev.panamax.cuda;

import dev.panamax.bindings.cuda.cuda_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicBoolean;

import static dev.panamax.cuda.CudaCalls.hex;

/**
 * An event ({@code CUevent}) of a context, from {@link CudaContext#createEvent(boolean)}. Destroyed exactly
 * once, by the first of {@link #close()} and its context's close; closing again does nothing.
 */
public final class CudaEvent implements AutoCloseable {
    private final CudaContext context;
    private final MemorySegment handle;
    private final boolean timing;
    private final AtomicBoolean closed = new AtomicBoolean();

    CudaEvent(CudaContext context, MemorySegment handle, boolean timing) {
        this.context = context;
        this.handle = handle;
        this.timing = timing;
    }

    /** The {@code CUevent}. */
    public MemorySegment handle() {
        requireOpen();
        return handle;
    }

    /** Whether it records time. */
    public boolean isTiming() {
        return timing;
    }

    /** Whether it has not been closed. */
    public boolean isOpen() {
        return !closed.get();
    }

    /** Records the event on a stream: it completes when the work queued before it has ({@code cuEventRecord}). */
    public void record(CudaStream stream) {
        requireOpen();
        stream.requireOpen();
        context.setCurrent();
        CudaCalls.check(cuda_h.cuEventRecord(handle, stream.rawHandle()),
                "cuEventRecord(" + this + ", " + stream + ")");
    }

    /** Waits until the event has completed ({@code cuEventSynchronize}). */
    public void synchronize() {
        requireOpen();
        context.setCurrent();
        CudaCalls.check(cuda_h.cuEventSynchronize(handle), "cuEventSynchronize(" + this + ")");
    }

    /**
     * The time in milliseconds from {@code start} to this event, both recorded and completed
     * ({@code cuEventElapsedTime_v2}; resolution about half a microsecond).
     *
     * @throws IllegalArgumentException when either event was created without timing
     */
    public float elapsedMillisSince(CudaEvent start) {
        requireOpen();
        start.requireOpen();
        if (!timing || !start.timing) {
            throw new IllegalArgumentException("elapsedMillisSince needs two events created with timing: "
                    + (timing ? start : this) + " was created without");
        }
        context.setCurrent();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment ms = arena.allocate(ValueLayout.JAVA_FLOAT);
            CudaCalls.check(cuda_h.cuEventElapsedTime_v2(ms, start.handle, handle),
                    "cuEventElapsedTime_v2(" + start + ", " + this + ")");
            return ms.get(ValueLayout.JAVA_FLOAT, 0);
        }
    }

    /** Destroys the event ({@code cuEventDestroy_v2}). */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        context.forget(this);
        context.setCurrent();
        CudaCalls.check(cuda_h.cuEventDestroy_v2(handle), "cuEventDestroy_v2(" + this + ")");
    }

    void requireOpen() {
        if (closed.get()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    @Override
    public String toString() {
        return "event " + hex(handle.address()) + " of " + context.device();
    }
}
