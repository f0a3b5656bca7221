package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.internal.transport.BufferAllocator;

import java.lang.foreign.MemorySegment;
import java.util.HashSet;
import java.util.Set;

/** A split communicator's buffers come from the parent's allocator; closing it frees only its own. */
final class SplitAllocator implements BufferAllocator {
    private final BufferAllocator parent;
    private final Set<MemorySegment> own = new HashSet<>();
    private boolean closed;

    SplitAllocator(BufferAllocator parent) {
        this.parent = parent;
    }

    @Override
    public synchronized MemorySegment allocate(long byteSize) {
        if (closed) {
            throw new IllegalStateException("the communicator is closed");
        }
        MemorySegment s = parent.allocate(byteSize);
        own.add(s);
        return s;
    }

    @Override
    public synchronized void free(MemorySegment buffer) {
        MemorySegment match = null;
        for (MemorySegment s : own) {
            if (s.address() == buffer.address()) {
                match = s;
                break;
            }
        }
        if (match == null) {
            throw new IllegalArgumentException("segment at 0x" + Long.toHexString(buffer.address())
                    + " was not allocated by this communicator (or was freed already)");
        }
        own.remove(match);
        parent.free(match);
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (MemorySegment s : own) {
            try {
                parent.free(s);
            } catch (RuntimeException ignored) {
                // the parent was closed first, which freed it
            }
        }
        own.clear();
    }
}
