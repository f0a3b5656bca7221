package dev.panamax.cuda;

import dev.panamax.bindings.cuda.CUipcMemHandle;
import dev.panamax.bindings.cuda.cuda_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicBoolean;

import static dev.panamax.cuda.CudaCalls.hex;

/**
 * Device memory: an allocation ({@link CudaContext#allocate}), a mapping of another process's allocation
 * ({@link CudaContext#openIpc}), or a view of part of one ({@link #slice}). Not a {@link MemorySegment}: the
 * host cannot dereference it; data moves with the copy methods.
 *
 * <p>An allocation or mapping is freed ({@code cuMemFree_v2} / {@code cuIpcCloseMemHandle}) exactly once, by
 * the first of {@link #close()} and its context's close; closing again does nothing. A view cannot be closed
 * (that is an {@link IllegalStateException}); it is usable while its allocation is open. Using closed memory
 * is an {@link IllegalStateException} naming it.
 *
 * <p>The synchronous copies and {@link #fill} return when the device has finished them. They run on the
 * legacy default stream, which {@linkplain CudaContext#createStream() the streams of this API} do not wait
 * for: synchronize a stream before a synchronous operation on memory it still uses, and the other way round.
 * Asynchronous copies need native host segments that stay alive until the stream has run them; they run at
 * full speed with {@linkplain PinnedMemory pinned} memory.
 *
 * <p>Sizes must match exactly: copy to or from a {@link #slice} or {@link MemorySegment#asSlice} to move part
 * of a buffer.
 */
public final class DeviceMemory implements AutoCloseable {
    /** Heap segments are copied through a native buffer of at most this size. */
    private static final long STAGING_BYTES = 4L << 20;

    private final CudaContext context;
    private final long address;
    private final long byteSize;
    /** The allocation this is a view of; {@code this} for an allocation. */
    private final DeviceMemory root;
    private final boolean ipc;
    private final AtomicBoolean closed = new AtomicBoolean();

    private DeviceMemory(CudaContext context, long address, long byteSize, DeviceMemory root, boolean ipc) {
        this.context = context;
        this.address = address;
        this.byteSize = byteSize;
        this.root = root == null ? this : root;
        this.ipc = ipc;
    }

    /** An allocation ({@code ipc} false) or an IPC mapping ({@code ipc} true), owned by {@code context}. */
    static DeviceMemory allocated(CudaContext context, long address, long byteSize, boolean ipc) {
        return new DeviceMemory(context, address, byteSize, null, ipc);
    }

    /** The device address of the first byte ({@code CUdeviceptr}). */
    public long address() {
        return address;
    }

    /** The size in bytes. */
    public long byteSize() {
        return byteSize;
    }

    /** The context it belongs to. */
    public CudaContext context() {
        return context;
    }

    /** Whether it is a view made by {@link #slice}. */
    public boolean isView() {
        return root != this;
    }

    /**
     * The allocation (or IPC mapping) this memory belongs to: itself unless it is a {@link #slice} view.
     * Only whole allocations can be exported ({@link #ipcHandle}), so a peer that maps a view needs the
     * allocation's handle and {@code address() - allocation().address()}.
     */
    public DeviceMemory allocation() {
        return root;
    }

    /** Whether it (for a view: its allocation) is not closed. */
    public boolean isOpen() {
        return !root.closed.get();
    }

    /**
     * A view of {@code byteSize} bytes from {@code byteOffset}: no copy, same memory. It cannot be closed and
     * is usable as long as the allocation is open.
     *
     * @throws IndexOutOfBoundsException when the range is not within this memory
     */
    public DeviceMemory slice(long byteOffset, long byteSize) {
        requireOpen();
        if (byteOffset < 0 || byteSize < 0 || byteOffset > this.byteSize - byteSize) {
            throw new IndexOutOfBoundsException("slice(" + byteOffset + ", " + byteSize + ") is out of bounds of "
                    + this);
        }
        return new DeviceMemory(context, address + byteOffset, byteSize, root, ipc);
    }

    /** Copies {@code src} (native or heap) to this memory ({@code cuMemcpyHtoD_v2}); waits for the copy. */
    public void copyFromHost(MemorySegment src) {
        requireOpen();
        requireSameSize(src.byteSize(), "source host segment");
        if (byteSize == 0) {
            return;
        }
        context.setCurrent();
        if (src.isNative()) {
            CudaCalls.check(cuda_h.cuMemcpyHtoD_v2(address, src, byteSize), "cuMemcpyHtoD_v2(" + this + ")");
        } else {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment staging = arena.allocate(Math.min(byteSize, STAGING_BYTES), 4096);
                for (long off = 0; off < byteSize; off += staging.byteSize()) {
                    long n = Math.min(staging.byteSize(), byteSize - off);
                    MemorySegment.copy(src, off, staging, 0, n);
                    CudaCalls.check(cuda_h.cuMemcpyHtoD_v2(address + off, staging, n),
                            "cuMemcpyHtoD_v2(" + this + ", offset " + off + ", " + n + " bytes)");
                    // The copy from pageable memory may still be in flight; the staging buffer is reused.
                    CudaCalls.synchronizeLegacyStream();
                }
            }
        }
        // From pageable memory the call returns before the copy is done (CUDA API synchronization behavior).
        CudaCalls.synchronizeLegacyStream();
    }

    /** Copies this memory to {@code dst} (native or heap) ({@code cuMemcpyDtoH_v2}); waits for the copy. */
    public void copyToHost(MemorySegment dst) {
        requireOpen();
        requireSameSize(dst.byteSize(), "destination host segment");
        if (dst.isReadOnly()) {
            throw new IllegalArgumentException("copyToHost: the destination segment is read-only: " + dst);
        }
        if (byteSize == 0) {
            return;
        }
        context.setCurrent();
        if (dst.isNative()) {
            CudaCalls.check(cuda_h.cuMemcpyDtoH_v2(dst, address, byteSize), "cuMemcpyDtoH_v2(" + this + ")");
        } else {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment staging = arena.allocate(Math.min(byteSize, STAGING_BYTES), 4096);
                for (long off = 0; off < byteSize; off += staging.byteSize()) {
                    long n = Math.min(staging.byteSize(), byteSize - off);
                    CudaCalls.check(cuda_h.cuMemcpyDtoH_v2(staging, address + off, n),
                            "cuMemcpyDtoH_v2(" + this + ", offset " + off + ", " + n + " bytes)");
                    MemorySegment.copy(staging, 0, dst, off, n);
                }
            }
        }
    }

    /** Copies {@code src} to this memory ({@code cuMemcpyDtoD_v2}); waits for the copy. */
    public void copyFrom(DeviceMemory src) {
        requireOpen();
        src.requireOpen();
        requireSameSize(src.byteSize, "source " + src);
        if (byteSize == 0) {
            return;
        }
        context.setCurrent();
        CudaCalls.check(cuda_h.cuMemcpyDtoD_v2(address, src.address, byteSize),
                "cuMemcpyDtoD_v2(" + this + ", from " + src + ")");
        CudaCalls.synchronizeLegacyStream(); // device-to-device copies do not wait on their own
    }

    /**
     * Queues a copy of {@code src} to this memory on {@code stream} ({@code cuMemcpyHtoDAsync_v2}). {@code src}
     * must stay alive and unchanged until the stream has run the copy.
     *
     * @throws IllegalArgumentException when {@code src} is a heap segment or its size differs
     */
    public void copyFromHostAsync(MemorySegment src, CudaStream stream) {
        requireOpen();
        stream.requireOpen();
        requireNative(src, "copyFromHostAsync");
        requireSameSize(src.byteSize(), "source host segment");
        if (byteSize == 0) {
            return;
        }
        stream.context().setCurrent();
        CudaCalls.check(cuda_h.cuMemcpyHtoDAsync_v2(address, src, byteSize, stream.rawHandle()),
                "cuMemcpyHtoDAsync_v2(" + this + ", " + stream + ")");
    }

    /**
     * Queues a copy of this memory to {@code dst} on {@code stream} ({@code cuMemcpyDtoHAsync_v2}). {@code dst}
     * must stay alive until the stream has run the copy.
     *
     * @throws IllegalArgumentException when {@code dst} is a heap segment, read-only, or its size differs
     */
    public void copyToHostAsync(MemorySegment dst, CudaStream stream) {
        requireOpen();
        stream.requireOpen();
        requireNative(dst, "copyToHostAsync");
        requireSameSize(dst.byteSize(), "destination host segment");
        if (dst.isReadOnly()) {
            throw new IllegalArgumentException("copyToHostAsync: the destination segment is read-only: " + dst);
        }
        if (byteSize == 0) {
            return;
        }
        stream.context().setCurrent();
        CudaCalls.check(cuda_h.cuMemcpyDtoHAsync_v2(dst, address, byteSize, stream.rawHandle()),
                "cuMemcpyDtoHAsync_v2(" + this + ", " + stream + ")");
    }

    /** Queues a copy of {@code src} to this memory on {@code stream} ({@code cuMemcpyDtoDAsync_v2}). */
    public void copyFromAsync(DeviceMemory src, CudaStream stream) {
        requireOpen();
        src.requireOpen();
        stream.requireOpen();
        requireSameSize(src.byteSize, "source " + src);
        if (byteSize == 0) {
            return;
        }
        stream.context().setCurrent();
        CudaCalls.check(cuda_h.cuMemcpyDtoDAsync_v2(address, src.address, byteSize, stream.rawHandle()),
                "cuMemcpyDtoDAsync_v2(" + this + ", from " + src + ", " + stream + ")");
    }

    /** Sets every byte to {@code value} ({@code cuMemsetD8_v2}); waits until done. */
    public void fill(byte value) {
        requireOpen();
        if (byteSize == 0) {
            return;
        }
        context.setCurrent();
        CudaCalls.check(cuda_h.cuMemsetD8_v2(address, value, byteSize), "cuMemsetD8_v2(" + this + ", " + value + ")");
        CudaCalls.synchronizeLegacyStream(); // a memset of device memory does not wait on its own
    }

    /**
     * Exports this allocation for another process ({@code cuIpcGetMemHandle}).
     *
     * @throws IllegalStateException when this is a view or an IPC mapping (only whole allocations made by
     *                               this process can be exported), or closed
     */
    public IpcMemoryHandle ipcHandle() {
        requireOpen();
        if (isView() || ipc) {
            throw new IllegalStateException("only an allocation made by this process can be exported, not "
                    + (isView() ? "a view: " : "an IPC mapping: ") + this);
        }
        context.setCurrent();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment h = arena.allocate(CUipcMemHandle.layout());
            CudaCalls.check(cuda_h.cuIpcGetMemHandle(h, address), "cuIpcGetMemHandle(" + this + ")");
            return new IpcMemoryHandle(h.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    /**
     * Frees the allocation ({@code cuMemFree_v2}) or unmaps the IPC mapping ({@code cuIpcCloseMemHandle}),
     * once; its views die with it. Does nothing when already closed.
     *
     * @throws IllegalStateException when this is a view
     */
    @Override
    public void close() {
        if (isView()) {
            throw new IllegalStateException("a view cannot be closed; close the memory it is a view of: " + this);
        }
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        context.forget(this);
        context.setCurrent();
        if (ipc) {
            CudaCalls.check(cuda_h.cuIpcCloseMemHandle(address), "cuIpcCloseMemHandle(" + this + ")");
        } else {
            CudaCalls.check(cuda_h.cuMemFree_v2(address), "cuMemFree_v2(" + this + ")");
        }
    }

    private void requireOpen() {
        if (!isOpen()) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    private void requireSameSize(long otherByteSize, String other) {
        if (otherByteSize != byteSize) {
            throw new IllegalArgumentException("size mismatch: " + other + " has " + otherByteSize + " bytes, "
                    + this + " has " + byteSize + " (copy to or from a slice to move part of a buffer)");
        }
    }

    private static void requireNative(MemorySegment host, String method) {
        if (!host.isNative()) {
            throw new IllegalArgumentException(method + " needs a native host segment (the copy runs after the call "
                    + "returns, and the garbage collector may move heap arrays): " + host);
        }
    }

    /** {@code device memory 0x7f2a00000000 (4096 bytes) on device 0}, or a view's or mapping's description. */
    @Override
    public String toString() {
        String what = ipc ? "IPC-mapped device memory " : "device memory ";
        String base = what + hex(root.address) + " (" + root.byteSize + " bytes) on " + context.device();
        return isView() ? "view [" + (address - root.address) + ", +" + byteSize + ") of " + base : base;
    }
}
