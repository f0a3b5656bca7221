package dev.panamax.memory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** Page-aligned host buffers owned by an {@link Arena}. */
public final class HostMemory {
    /** The alignment of host buffers: one (small) page. */
    public static final long PAGE_SIZE = 4096;

    private HostMemory() {
    }

    /** A zeroed, page-aligned segment of {@code byteSize} bytes, freed when {@code arena} closes. */
    public static MemorySegment allocate(Arena arena, long byteSize) {
        if (byteSize < 0) {
            throw new IllegalArgumentException("byteSize must be >= 0: " + byteSize);
        }
        return arena.allocate(Math.max(byteSize, 1), PAGE_SIZE).asSlice(0, byteSize);
    }

    /** A page-aligned segment of {@code count} elements of {@code type}. */
    public static MemorySegment allocate(Arena arena, DataType type, long count) {
        return allocate(arena, Math.multiplyExact(count, (long) type.byteSize()));
    }
}
