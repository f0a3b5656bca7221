package dev.panamax.collectives.internal.device;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

/**
 * The device side of {@link DeviceScheduleExecutor}: memory of one rank, its export to same-host
 * peers, and an ordered queue of copies and reductions (a CUDA stream, or a worker thread for the
 * host-memory implementation that tests the executor without a GPU). Offsets are in bytes.
 *
 * <p>Everything {@code copy}, {@code reduce} and {@code divide} enqueue runs in issue order;
 * {@link #await} returns when all of it has finished. One rank uses one instance from one thread.
 *
 * @param <B> a buffer: {@code DeviceMemory} for CUDA, {@code MemorySegment} for host memory
 */
interface DeviceOps<B> extends AutoCloseable {
    /** Size of an exported handle, the size of {@code CUipcMemHandle}. */
    int HANDLE_BYTES = 64;

    /** A new buffer of this rank (contents undefined), freed by {@link #free}. */
    B allocate(long byteSize);

    void free(B buffer);

    long byteSize(B buffer);

    /** A view of {@code byteSize} bytes of {@code buffer} from {@code offset}: no copy, not to be freed. */
    B slice(B buffer, long offset, long byteSize);

    /** The whole allocation {@code buffer} is part of (only whole allocations can be exported). */
    B allocationOf(B buffer);

    /** {@code buffer}'s offset in bytes within {@link #allocationOf}. */
    long offsetInAllocation(B buffer);

    /** The handle of an allocation made by this rank, {@link #HANDLE_BYTES} bytes, that a peer passes to {@link #open}.
     * */
    byte[] export(B allocation);

    /** Maps a peer's exported allocation into this rank; unmapped by {@link #close(Object)}. */
    B open(byte[] handle);

    /** Unmaps what {@link #open} mapped. */
    void close(B mapping);

    /** Enqueues a copy of {@code byteSize} bytes; either side may be a peer's mapped allocation. */
    void copy(B src, long srcOffset, B dst, long dstOffset, long byteSize);

    /** Enqueues {@code inout = op(inout, in)} over {@code count} elements ({@code AVG} reduces as {@code SUM}). */
    void reduce(ReduceOp op, DataType type, B inout, long inoutOffset, B in, long inOffset, long count);

    /** Enqueues {@code inout /= divisor} over {@code count} elements (the end of {@code AVG}). */
    void divide(DataType type, B inout, long offset, long count, int divisor);

    /**
     * Waits until everything enqueued has finished.
     *
     * @throws dev.panamax.collectives.CollectiveTimeoutException after {@code timeoutNanos}
     */
    void await(long timeoutNanos);

    /** For messages: what the buffer is. */
    String describe(B buffer);

    /** Waits for the queue (bounded) and releases it; buffers are the caller's to free before. */
    @Override
    void close();
}
