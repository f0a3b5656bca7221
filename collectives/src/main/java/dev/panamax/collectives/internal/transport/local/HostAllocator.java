package dev.panamax.collectives.internal.transport.local;

import dev.panamax.collectives.internal.transport.BufferAllocator;
import dev.panamax.memory.HostMemory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.HashMap;

/** Plain page-aligned host memory, one shared arena per buffer (for in-JVM ranks, which read each other's memory
 * anyway). */
public final class HostAllocator implements BufferAllocator {
    private final Map<Long, Arena> arenas = new HashMap<>();
    private boolean closed;

    @Override
    public synchronized MemorySegment allocate(long byteSize) {
        if (closed) {
            throw new IllegalStateException("the communicator is closed");
        }
        Arena arena = Arena.ofShared();
        MemorySegment s = HostMemory.allocate(arena, byteSize);
        arenas.put(s.address(), arena);
        return s;
    }

    @Override
    public synchronized void free(MemorySegment buffer) {
        Arena a = arenas.remove(buffer.address());
        if (a == null) {
            throw new IllegalArgumentException("segment at 0x" + Long.toHexString(buffer.address())
                    + " was not allocated by this communicator (or was freed already)");
        }
        a.close();
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Arena a : arenas.values()) {
            a.close();
        }
        arenas.clear();
    }

}
