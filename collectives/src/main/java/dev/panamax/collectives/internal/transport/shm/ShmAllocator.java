package dev.panamax.collectives.internal.transport.shm;

import dev.panamax.collectives.internal.transport.BufferAllocator;
import dev.panamax.memory.HostMemory;
import dev.panamax.memory.SharedMemory;

import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Buffers in anonymous shared memory (one memfd region per buffer). The shared-memory transport
 * looks a send buffer up here: when it lies in one of these regions, the peer maps the region and
 * reads the data in place, so nothing is copied through staging.
 */
public final class ShmAllocator implements BufferAllocator {
    private static final AtomicLong IDS = new AtomicLong();

    /** A buffer's region and where a slice of it starts. */
    record Located(SharedMemory.Handle handle, long regionId, long offset) {
    }

    private record Entry(SharedMemory.Region region, long regionId) {
    }

    private final TreeMap<Long, Entry> byAddress = new TreeMap<>();
    private boolean closed;

    @Override
    public synchronized MemorySegment allocate(long byteSize) {
        if (closed) {
            throw new IllegalStateException("the communicator is closed");
        }
        long mapped = Math.max(HostMemory.PAGE_SIZE, (byteSize + HostMemory.PAGE_SIZE - 1) / HostMemory.PAGE_SIZE
                * HostMemory.PAGE_SIZE);
        SharedMemory.Region r = SharedMemory.create("buffer", mapped);
        byAddress.put(r.segment().address(), new Entry(r, IDS.incrementAndGet()));
        return r.segment().asSlice(0, byteSize);
    }

    @Override
    public synchronized void free(MemorySegment buffer) {
        Entry e = byAddress.get(buffer.address());
        if (e == null || buffer.heapBase().isPresent()) {
            throw new IllegalArgumentException("segment at 0x" + Long.toHexString(buffer.address())
                    + " was not allocated by this communicator (or was freed already)");
        }
        byAddress.remove(buffer.address());
        e.region().close();
    }

    /** Where {@code s} lives, if all of it lies in one region of this allocator; else null. */
    synchronized Located locate(MemorySegment s) {
        if (s.heapBase().isPresent()) {
            return null;
        }
        Map.Entry<Long, Entry> e = byAddress.floorEntry(s.address());
        if (e == null) {
            return null;
        }
        MemorySegment region = e.getValue().region().segment();
        long offset = s.address() - region.address();
        if (offset + s.byteSize() > region.byteSize() || !region.scope().isAlive()) {
            return null;
        }
        return new Located(e.getValue().region().handle(), e.getValue().regionId(), offset);
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Entry e : byAddress.values()) {
            e.region().close();
        }
        byAddress.clear();
    }
}
