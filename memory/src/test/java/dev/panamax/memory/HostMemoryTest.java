package dev.panamax.memory;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class HostMemoryTest {
    @Test
    void pageAlignedAndZeroed() {
        try (Arena arena = Arena.ofConfined()) {
            for (long size : new long[]{1, 7, 4095, 4096, 4097, 1 << 20, (1 << 20) + 3}) {
                MemorySegment s = HostMemory.allocate(arena, size);
                assertEquals(size, s.byteSize());
                assertEquals(0, s.address() % HostMemory.PAGE_SIZE, "alignment of " + size + " bytes");
                for (long i = 0; i < size; i++) {
                    if (s.get(ValueLayout.JAVA_BYTE, i) != 0) {
                        throw new AssertionError("byte " + i + " of " + size + " is not zero");
                    }
                }
                s.fill((byte) 1); // writable to the end
            }
        }
    }

    @Test
    void sizeZeroAndTypedAllocation() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment empty = HostMemory.allocate(arena, 0);
            assertEquals(0, empty.byteSize());
            assertEquals(0, empty.address() % HostMemory.PAGE_SIZE);
            MemorySegment typed = HostMemory.allocate(arena, DataType.FLOAT64, 1000);
            assertEquals(8000, typed.byteSize());
            assertEquals(0, typed.address() % HostMemory.PAGE_SIZE);
            assertEquals(0, HostMemory.allocate(arena, DataType.BFLOAT16, 0).byteSize());
        }
    }

    @Test
    void badSizesThrow() {
        try (Arena arena = Arena.ofConfined()) {
            assertThrows(IllegalArgumentException.class, () -> HostMemory.allocate(arena, -1));
            assertThrows(ArithmeticException.class, () ->
                    HostMemory.allocate(arena, DataType.INT64, Long.MAX_VALUE / 4));
        }
    }

    @Test
    void freedWithTheArena() {
        Arena arena = Arena.ofConfined();
        MemorySegment s = HostMemory.allocate(arena, 4096);
        arena.close();
        assertThrows(IllegalStateException.class, () -> s.get(ValueLayout.JAVA_BYTE, 0));
    }
}
