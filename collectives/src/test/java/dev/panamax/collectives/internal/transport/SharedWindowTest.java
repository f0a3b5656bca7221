package dev.panamax.collectives.internal.transport;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SharedWindowTest {
    private static final long LINE = 64;

    @Test
    void aSmallCallLiesInTheCacheLineItsReadersPoll() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment region = region(arena, SharedWindow.MAX_CAPACITY_BYTES);
            SharedWindow w = new SharedWindow(region);
            MemorySegment input = arena.allocate(SharedWindow.FIRST_LINE_DATA_BYTES, 8);
            for (long k = 1; k <= 4; k++) {
                input.fill((byte) k);
                w.publish(k, input, input.byteSize(), 7, 0.5);
                long line = w.dataOffset(k) / LINE;
                // The reader's acquire of the sequence number brings the data: both in one line.
                assertEquals(line, (w.dataOffset(k) + input.byteSize() - 1) / LINE, "call " + k);
                assertEquals(k, region.get(ValueLayout.JAVA_LONG, line * LINE), "call " + k + "'s number");
                assertEquals(k, region.get(ValueLayout.JAVA_BYTE, w.dataOffset(k)));
                assertEquals(input.byteSize(), w.byteCount(k));
                assertEquals(7, w.code(k));
                assertEquals(0.5, w.scalar(k));
            }
        }
    }

    @Test
    void everyByteOfACallReadsBackWhereDataOffsetSaysWhateverItsSize() {
        // The data past the first line is written before the first line: each size must still land whole.
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment region = region(arena, SharedWindow.MAX_CAPACITY_BYTES);
            SharedWindow w = new SharedWindow(region);
            MemorySegment input = arena.allocate(SharedWindow.MAX_CAPACITY_BYTES, 8);
            long k = 0;
            for (long bytes : new long[] {0, 1, 31, 32, 33, 63, 64, 65, 509, 512, 513, 4096}) {
                k++;
                for (long i = 0; i < input.byteSize(); i++) {
                    input.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + k));
                }
                region.asSlice(w.dataOffset(k), SharedWindow.MAX_CAPACITY_BYTES).fill((byte) -1);
                w.publish(k, input, bytes, k, k);
                long at = w.dataOffset(k);
                assertEquals(-1, MemorySegment.mismatch(input, 0, bytes, region, at, at + bytes), bytes + " bytes");
                if (bytes < SharedWindow.MAX_CAPACITY_BYTES) {
                    assertEquals((byte) -1, region.get(ValueLayout.JAVA_BYTE, at + bytes),
                            "the byte after a call of " + bytes + " bytes");
                }
                assertEquals(bytes, w.byteCount(k));
                assertEquals(k, w.code(k));
                assertTrue(w.shows(k, bytes));
            }
        }
    }

    @Test
    void aPollThatLoadsTheDataLinesAnswersAsOneThatDoesNot() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment region = region(arena, SharedWindow.MAX_CAPACITY_BYTES);
            SharedWindow w = new SharedWindow(region);
            MemorySegment input = arena.allocate(SharedWindow.MAX_CAPACITY_BYTES, 8);
            for (long k = 1; k <= 3; k++) {
                for (long bytes = 0; bytes <= SharedWindow.MAX_CAPACITY_BYTES; bytes++) {
                    assertFalse(w.shows(k, bytes), "call " + k + " of " + bytes + " bytes before it is published");
                    assertFalse(w.shows(k + 1, bytes), "call " + (k + 1) + " of " + bytes + " bytes");
                }
                w.publish(k, input, SharedWindow.POLLED_DATA_BYTES, 0, 0);
                for (long bytes = 0; bytes <= SharedWindow.MAX_CAPACITY_BYTES; bytes++) {
                    assertTrue(w.shows(k, bytes), "call " + k + " polled as " + bytes + " bytes");
                }
            }
        }
    }

    @Test
    void aCallShowsOnceItsOwnBlockIsPublished() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment region = region(arena, 64);
            SharedWindow w = new SharedWindow(region);
            MemorySegment input = arena.allocate(64, 8);
            assertFalse(w.shows(1));
            w.publish(1, input, 64, 0, 0);
            assertTrue(w.shows(1));
            assertFalse(w.shows(2));
            assertFalse(w.shows(3), "call 3 shares call 1's block, which holds call 1");
            w.publish(2, input, 64, 0, 0);
            assertTrue(w.shows(2));
            assertEquals(2, w.sequence());
            w.publish(3, input, 64, 0, 0);
            assertTrue(w.shows(3));
            assertEquals(3, w.sequence());
            assertEquals(64, w.capacityBytes());
        }
    }

    /** A window region of {@code capacityBytes} per call, as its owner initializes it. */
    private static MemorySegment region(Arena arena, long capacityBytes) {
        MemorySegment region = arena.allocate(SharedWindow.BYTES, LINE);
        SharedWindow.initialize(region, capacityBytes);
        return region;
    }
}
