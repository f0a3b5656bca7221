package dev.panamax.collectives.internal.device;

import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.Reductions;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import dev.panamax.collectives.CollectiveException;

/**
 * {@link DeviceOps} on host memory for ranks that are threads of one JVM: "device" buffers are
 * native segments, a handle names a segment in a {@link Fabric} the ranks share, and the queue is
 * one worker thread per rank, so work really runs after it is enqueued, as on a CUDA stream. It
 * lets the device executor's protocol and layout run and be checked without a GPU.
 */
final class EmulatedDeviceOps implements DeviceOps<MemorySegment> {
    /** The exported segments of a group of in-JVM ranks. */
    static final class Fabric {
        private final Map<Long, MemorySegment> exported = new ConcurrentHashMap<>();
        private final AtomicLong ids = new AtomicLong(1);
    }

    private final Fabric fabric;
    private final String name;
    private final ExecutorService queue;
    private final Map<MemorySegment, Arena> owned = new IdentityHashMap<>();
    private final Map<MemorySegment, Long> exportedIds = new IdentityHashMap<>();
    private volatile Throwable queueFailure;

    EmulatedDeviceOps(Fabric fabric, int rank) {
        this.fabric = fabric;
        this.name = "host device of rank " + rank;
        this.queue = Executors.newSingleThreadExecutor(r ->
                Thread.ofPlatform().daemon().name("panamax-hostdev-" + rank).unstarted(r));
    }

    @Override
    public MemorySegment allocate(long byteSize) {
        Arena a = Arena.ofShared();
        MemorySegment s = a.allocate(byteSize, 64);
        owned.put(s, a);
        return s;
    }

    @Override
    public void free(MemorySegment buffer) {
        Long id = exportedIds.remove(buffer);
        if (id != null) {
            fabric.exported.remove(id);
        }
        Arena a = owned.remove(buffer);
        if (a == null) {
            throw new IllegalArgumentException("not allocated by " + name + ": " + buffer);
        }
        a.close();
    }

    @Override
    public long byteSize(MemorySegment buffer) {
        return buffer.byteSize();
    }

    @Override
    public MemorySegment slice(MemorySegment buffer, long offset, long byteSize) {
        return buffer.asSlice(offset, byteSize);
    }

    /** A segment is its own allocation here: views made elsewhere cannot be traced to their parent. */
    @Override
    public MemorySegment allocationOf(MemorySegment buffer) {
        return buffer;
    }

    @Override
    public long offsetInAllocation(MemorySegment buffer) {
        return 0;
    }

    @Override
    public byte[] export(MemorySegment allocation) {
        long id = exportedIds.computeIfAbsent(allocation, s -> {
            long n = fabric.ids.getAndIncrement();
            fabric.exported.put(n, s);
            return n;
        });
        byte[] h = new byte[HANDLE_BYTES];
        MemorySegment.ofArray(h).set(ValueLayout.JAVA_LONG_UNALIGNED, 0, id);
        return h;
    }

    @Override
    public MemorySegment open(byte[] handle) {
        long id = MemorySegment.ofArray(handle).get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
        MemorySegment s = fabric.exported.get(id);
        if (s == null) {
            throw new IllegalArgumentException(name + ": no exported segment " + id);
        }
        return s;
    }

    @Override
    public void close(MemorySegment mapping) {
        // nothing is mapped: the peer's segment is shared as it is
    }

    @Override
    public void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long byteSize) {
        submit(() -> MemorySegment.copy(src, srcOffset, dst, dstOffset, byteSize));
    }

    @Override
    public void reduce(ReduceOp op, DataType type, MemorySegment inout, long inoutOffset, MemorySegment in,
            long inOffset, long count) {
        ReduceOp o = op == ReduceOp.AVG ? ReduceOp.SUM : op;
        submit(() -> Reductions.accumulate(type, o, inout, inoutOffset, in, inOffset, count));
    }

    @Override
    public void divide(DataType type, MemorySegment inout, long offset, long count, int divisor) {
        submit(() -> Reductions.divide(type, inout, offset, count, divisor));
    }

    private void submit(Runnable work) {
        queue.execute(() -> {
            if (queueFailure == null) {
                try {
                    work.run();
                } catch (RuntimeException | Error e) {
                    queueFailure = e;
                }
            }
        });
    }

    @Override
    public void await(long timeoutNanos) {
        Future<?> marker = queue.submit(() -> { });
        try {
            marker.get(timeoutNanos, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new CollectiveTimeoutException(name + ": queued work did not finish in " + timeoutNanos / 1_000_000
                    + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CollectiveException(name + ": interrupted while waiting for queued work", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException(name + ": " + e.getCause(), e.getCause());
        }
        Throwable f = queueFailure;
        if (f != null) {
            throw new IllegalStateException(name + ": queued work failed: " + f, f);
        }
    }

    @Override
    public String describe(MemorySegment buffer) {
        return "host segment 0x" + Long.toHexString(buffer.address()) + " (" + buffer.byteSize() + " bytes)";
    }

    @Override
    public void close() {
        queue.shutdown();
        try {
            if (!queue.awaitTermination(10, TimeUnit.SECONDS)) {
                queue.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
