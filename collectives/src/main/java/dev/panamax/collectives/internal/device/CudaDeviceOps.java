package dev.panamax.collectives.internal.device;

import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.cuda.CudaContext;
import dev.panamax.cuda.CudaStream;
import dev.panamax.cuda.DeviceMemory;
import dev.panamax.cuda.IpcMemoryHandle;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.concurrent.AdaptiveBackoffIdleStrategy;
import dev.panamax.memory.concurrent.IdleStrategies;

import java.util.concurrent.TimeUnit;

/**
 * {@link DeviceOps} on a CUDA device: buffers are {@link DeviceMemory}, handles are
 * {@code cuIpcGetMemHandle}'s, peers' allocations are mapped with {@code cuIpcOpenMemHandle},
 * copies are {@code cuMemcpyDtoDAsync} and reductions the GPU kernels, all on one stream of its own;
 * {@link #await} polls the stream ({@code cuStreamQuery}) so that the wait has a timeout.
 */
final class CudaDeviceOps implements DeviceOps<DeviceMemory> {
    /** The element-wise GPU kernels: {@code inout = op(inout, in)} ({@code AVG} as {@code SUM}) and {@code inout /=
     * divisor}. */
    interface Kernels extends AutoCloseable {
        void reduce(ReduceOp op, DataType type, DeviceMemory inout, DeviceMemory in, long count, CudaStream stream);

        void divide(DataType type, DeviceMemory inout, long count, int divisor, CudaStream stream);

        @Override
        void close();
    }

    private final CudaContext context;
    private final Kernels kernels;
    private final CudaStream stream;
    private final AdaptiveBackoffIdleStrategy backoff = IdleStrategies.adaptiveBackoff(false);

    /** A stream of its own on {@code context}; {@code kernels} stay the caller's. */
    CudaDeviceOps(CudaContext context, Kernels kernels) {
        this.context = context;
        this.kernels = kernels;
        this.stream = context.createStream();
    }

    @Override
    public DeviceMemory allocate(long byteSize) {
        return context.allocate(byteSize);
    }

    @Override
    public void free(DeviceMemory buffer) {
        buffer.close();
    }

    @Override
    public long byteSize(DeviceMemory buffer) {
        return buffer.byteSize();
    }

    @Override
    public DeviceMemory slice(DeviceMemory buffer, long offset, long byteSize) {
        return buffer.slice(offset, byteSize);
    }

    @Override
    public DeviceMemory allocationOf(DeviceMemory buffer) {
        return buffer.allocation();
    }

    @Override
    public long offsetInAllocation(DeviceMemory buffer) {
        return buffer.address() - buffer.allocation().address();
    }

    @Override
    public byte[] export(DeviceMemory allocation) {
        return allocation.ipcHandle().toBytes();
    }

    @Override
    public DeviceMemory open(byte[] handle) {
        return context.openIpc(IpcMemoryHandle.fromBytes(handle));
    }

    @Override
    public void close(DeviceMemory mapping) {
        mapping.close();
    }

    @Override
    public void copy(DeviceMemory src, long srcOffset, DeviceMemory dst, long dstOffset, long byteSize) {
        dst.slice(dstOffset, byteSize).copyFromAsync(src.slice(srcOffset, byteSize), stream);
    }

    @Override
    public void reduce(ReduceOp op, DataType type, DeviceMemory inout, long inoutOffset, DeviceMemory in, long inOffset,
            long count) {
        long bytes = count * type.byteSize();
        kernels.reduce(op, type, inout.slice(inoutOffset, bytes), in.slice(inOffset, bytes), count, stream);
    }

    @Override
    public void divide(DataType type, DeviceMemory inout, long offset, long count, int divisor) {
        kernels.divide(type, inout.slice(offset, count * type.byteSize()), count, divisor, stream);
    }

    @Override
    public void await(long timeoutNanos) {
        long deadline = System.nanoTime() + timeoutNanos;
        backoff.reset();
        while (!stream.isIdle()) {
            if (System.nanoTime() - deadline >= 0) {
                throw new CollectiveTimeoutException("the copies and reductions on " + stream + " did not finish in "
                        + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms");
            }
            backoff.idle();
        }
    }

    @Override
    public String describe(DeviceMemory buffer) {
        return buffer.toString();
    }

    /** Waits for the stream (bounded) and destroys it. */
    @Override
    public void close() {
        try {
            await(TimeUnit.SECONDS.toNanos(10));
        } finally {
            stream.close();
        }
    }
}
