package dev.panamax.bench.gpu;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The check behind GpuAllReduceBench's {@code #wrong} column, on host memory (the rest needs a GPU). */
class GpuAllReduceBenchTest {
    @Test
    void theSumOfEveryRanksInputHasNothingWrong() {
        int ranks = 3;
        long count = 1000;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment sum = arena.allocate(count * 4, 4);
            MemorySegment input = arena.allocate(count * 4, 4);
            for (int r = 0; r < ranks; r++) {
                GpuAllReduceBench.fillInput(input, count, r);
                for (long i = 0; i < count; i++) {
                    sum.setAtIndex(ValueLayout.JAVA_FLOAT, i, sum.getAtIndex(ValueLayout.JAVA_FLOAT, i)
                            + input.getAtIndex(ValueLayout.JAVA_FLOAT, i));
                }
            }
            assertEquals(0, GpuAllReduceBench.countWrong(sum, count, ranks));
            // one rank's input alone, a corrupted element, a sum over the wrong number of ranks
            GpuAllReduceBench.fillInput(input, count, 0);
            assertEquals(count, GpuAllReduceBench.countWrong(input, count, ranks));
            sum.setAtIndex(ValueLayout.JAVA_FLOAT, 997, 0f);
            assertEquals(1, GpuAllReduceBench.countWrong(sum, count, ranks));
            assertEquals(count, GpuAllReduceBench.countWrong(sum, count, ranks + 1));
        }
    }
}
