package dev.panamax.bench.perf;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class PerfRunnerTest {
    private static final long KIB = 1024;
    private static final long MIB = 1024 * KIB;

    @Test
    void aJitWarmUpCyclesOverTheSweepsSizesInItsRange() {
        List<Long> sweep = Sizes.sweep(8, 4 * MIB, 8, 0); // 8 B .. 2 MiB
        assertEquals(List.of(8L, 64L, 512L, 4 * KIB, 32 * KIB), PerfRunner.warmUpSizes(sweep, 0, 64 * KIB));
        assertEquals(List.of(256 * KIB), PerfRunner.warmUpSizes(sweep, 64 * KIB + 1, MIB));
    }

    @Test
    void aSweepOfLargerSizesOnlyIsWarmedUpAtTheTopOfTheRange() {
        List<Long> large = List.of(16 * MIB, 256 * MIB);
        assertEquals(List.of(64 * KIB), PerfRunner.warmUpSizes(large, 0, 64 * KIB));
        assertEquals(List.of(MIB), PerfRunner.warmUpSizes(large, 64 * KIB + 1, MIB));
    }

    @Test
    void aSweepOfSmallerSizesOnlyHasNothingToWarmUpAbove() {
        List<Long> small = List.of(8L, 64L);
        assertEquals(List.of(), PerfRunner.warmUpSizes(small, 64 * KIB + 1, MIB));
        assertEquals(List.of(0L), PerfRunner.warmUpSizes(List.of(0L), 0, 64 * KIB));
    }
}
