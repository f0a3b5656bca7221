package dev.panamax.bench.perf;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class SizesTest {
    @Test
    void parsesNcclTestsSuffixes() {
        assertEquals(8, Sizes.parse("8"));
        assertEquals(64 * 1024, Sizes.parse("64K"));
        assertEquals(64 * 1024, Sizes.parse("64k"));
        assertEquals(64 * 1024, Sizes.parse("64KB"));
        assertEquals(64 * 1024, Sizes.parse("64KiB"));
        assertEquals(1 << 20, Sizes.parse("1M"));
        assertEquals(64L << 20, Sizes.parse("64M"));
        assertEquals(2L << 30, Sizes.parse("2G"));
        assertEquals(0, Sizes.parse("0"));
    }

    @Test
    void rejectsGarbage() {
        assertThrows(IllegalArgumentException.class, () -> Sizes.parse("abc"));
        assertThrows(IllegalArgumentException.class, () -> Sizes.parse("-8"));
        assertThrows(IllegalArgumentException.class, () -> Sizes.parse("1.5M"));
        assertThrows(IllegalArgumentException.class, () -> Sizes.parse("99999999999999T"));
    }

    @Test
    void formatsExactly() {
        assertEquals("8", Sizes.format(8));
        assertEquals("64K", Sizes.format(65536));
        assertEquals("1M", Sizes.format(1 << 20));
        assertEquals("3000", Sizes.format(3000));
    }

    @Test
    void sweepsByFactorAndIncrement() {
        assertEquals(List.of(8L, 16L, 32L, 64L), Sizes.sweep(8, 64, 2, 0));
        assertEquals(List.of(8L, 16L, 32L), Sizes.sweep(8, 63, 2, 0));
        assertEquals(List.of(1L << 20, 4L << 20, 16L << 20, 64L << 20), Sizes.sweep(1 << 20, 64 << 20, 4, 0));
        assertEquals(List.of(100L, 150L, 200L), Sizes.sweep(100, 200, 0, 50));
        assertEquals(List.of(0L, 1L, 2L, 4L), Sizes.sweep(0, 4, 2, 0));
        assertEquals(List.of(10L), Sizes.sweep(10, 10, 2, 0));
        assertThrows(IllegalArgumentException.class, () -> Sizes.sweep(10, 5, 2, 0));
        assertThrows(IllegalArgumentException.class, () -> Sizes.sweep(1, 5, 1, 0));
    }
}
