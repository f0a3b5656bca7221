package dev.panamax.collectives.internal;

import java.lang.foreign.MemorySegment;

/**
 * Reusable work buffers of a communicator, from its allocator (shared memory where peers read it
 * directly). Grown on demand, never shrunk: after the first call of a size, collectives allocate
 * nothing and touch no new pages.
 */
final class Scratch {
    private final BufferAllocator allocator;
    private final MemorySegment[] buffers = new MemorySegment[3];

    Scratch(BufferAllocator allocator) {
        this.allocator = allocator;
    }

    /** Buffer {@code index} (0..2) with at least {@code byteSize} bytes, sliced to exactly that size. */
    MemorySegment get(int index, long byteSize) {
        MemorySegment b = buffers[index];
        if (b == null || b.byteSize() < byteSize) {
            if (b != null) {
                allocator.free(b);
            }
            // Round up so that a slowly growing size does not reallocate every time.
            long cap = Math.max(4096, Long.highestOneBit(Math.max(1, byteSize - 1)) << 1);
            b = allocator.allocate(cap);
            buffers[index] = b;
        }
        return b.asSlice(0, byteSize);
    }
}
