package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.internal.transport.BufferAllocator;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Reusable work buffers of a communicator, from its allocator (shared memory where peers read it
 * directly). Grown on demand, never shrunk: after the first call of a size, collectives allocate
 * nothing and touch no new pages.
 */
final class ScratchBuffers {
    private final BufferAllocator allocator;
    private MemorySegment[] buffers = new MemorySegment[4];
    /** The slice last handed out per buffer: repeated calls of one size get the same object (no allocation, and
     * the executor's views of it stay valid). */
    private MemorySegment[] slices = new MemorySegment[4];

    ScratchBuffers(BufferAllocator allocator) {
        this.allocator = allocator;
    }

    /** Buffer {@code index} with at least {@code byteSize} bytes, sliced to exactly that size. */
    MemorySegment get(int index, long byteSize) {
        if (index >= buffers.length) {
            buffers = Arrays.copyOf(buffers, Math.max(index + 1, buffers.length * 2));
            slices = Arrays.copyOf(slices, buffers.length);
        }
        MemorySegment last = slices[index];
        if (last != null && last.byteSize() == byteSize) {
            return last;
        }
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
        slices[index] = b.asSlice(0, byteSize);
        return slices[index];
    }

    /** Frees every buffer (for a sub-communicator whose allocator outlives it). */
    void release() {
        for (int i = 0; i < buffers.length; i++) {
            if (buffers[i] != null) {
                try {
                    allocator.free(buffers[i]);
                } catch (RuntimeException ignored) {
                    // the allocator was closed already, which freed it
                }
                buffers[i] = null;
            }
            slices[i] = null;
        }
    }
}
