package dev.panamax.collectives.internal.transport;

import java.lang.foreign.MemorySegment;

/** Where a communicator's own buffers ({@code allocate}, scratch) come from. */
public interface BufferAllocator extends AutoCloseable {
    /** A zeroed, page-aligned buffer of {@code byteSize} bytes. */
    MemorySegment allocate(long byteSize);

    /** Frees a buffer this allocator returned; throws IllegalArgumentException for any other segment. */
    void free(MemorySegment buffer);

    /** Frees everything still allocated. Idempotent. */
    @Override
    void close();
}
