package dev.panamax.cuda;

import dev.panamax.bindings.cuda.cuda_h;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

import static dev.panamax.cuda.CudaCalls.hex;

/**
 * A non-blocking stream ({@code CUstream}) of a context, from {@link CudaContext#createStream()}. Destroyed
 * exactly once, by the first of {@link #close()} and its context's close; closing again does nothing.
 */
public final class CudaStream implements AutoCloseable {
    private final CudaContext context;
    private final MemorySegment handle;
    private final AtomicBoolean closed = new AtomicBoolean();

    CudaStream(CudaContext context, MemorySegment handle) {
        this.context = context;
        this.handle = handle;
    }

    /** The {@code CUstream}, for calls this API does not wrap (NCCL, kernel launches). */
    public MemorySegment handle() {
        requireOpen();
        return handle;
    }

    /** The context it belongs to. */
    public CudaContext context() {
        return context;
    }

    /** Whether it has not been closed. */
    public boolean isOpen() {
        return !closed.get();
    }

    /** Waits until all work queued on it has finished ({@code cuStreamSynchronize}). */
    public void synchronize() {
        requireOpen();
        context.setCurrent();
        CudaCalls.check(cuda_h.cuStreamSynchronize(handle), "cuStreamSynchronize(" + this + ")");
    }

    /** Whether all work queued on it has finished ({@code cuStreamQuery}); does not wait. */
    public boolean isIdle() {
        requireOpen();
        context.setCurrent();
        int rc = cuda_h.cuStreamQuery(handle);
        if (rc == cuda_h.CUDA_ERROR_NOT_READY()) {
            return false;
        }
        CudaCalls.check(rc, "cuStreamQuery(" + this + ")");
        return true;
    }

    /** Destroys the stream ({@code cuStreamDestroy_v2}); work already queued still completes. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        context.forget(this);
        context.setCurrent();
        CudaCalls.check(cuda_h.cuStreamDestroy_v2(handle), "cuStreamDestroy_v2(" + this + ")");
    }

    /** The handle, without the checks of {@link #handle()}. */
    MemorySegment rawHandle() {
        return handle;
    }

    void requireOpen() {
        if (closed.get()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    @Override
    public String toString() {
        return "stream " + hex(handle.address()) + " of " + context.device();
    }
}
