package dev.panamax.bench.perf;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CheckDataTest {
    @Test
    void productIsTwoEverywhere() {
        CheckData d = new CheckData(PerfCollective.ALLREDUCE, DataType.BFLOAT16, ReduceOp.PROD, 5, 0);
        for (long i = 0; i < 1000; i++) {
            assertEquals(2.0, d.expected(0, 1000, i));
        }
    }

    @Test
    void inputsAreSmallIntegers() {
        CheckData sum = new CheckData(PerfCollective.ALLREDUCE, DataType.INT8, ReduceOp.SUM, 4, 0);
        CheckData gather = new CheckData(PerfCollective.ALLGATHER, DataType.INT8, ReduceOp.SUM, 4, 0);
        for (long i = 0; i < 1000; i++) {
            double v = sum.input(1, i);
            assertTrue(v >= 1 && v <= 5 && v == Math.rint(v));
            double g = gather.input(3, i);
            assertTrue(g >= 1 && g <= 100 && g == Math.rint(g));
        }
    }

    @Test
    void countsWrongElements() {
        int ranks = 3;
        long count = 64;
        CheckData d = new CheckData(PerfCollective.ALLGATHER, DataType.FLOAT32, ReduceOp.SUM, ranks, 0);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment recv = arena.allocate(count * ranks * 4);
            for (int r = 0; r < ranks; r++) {
                d.fill(recv.asSlice(r * count * 4), r, count);
            }
            assertEquals(0, d.countWrong(recv, 1, count));
            DataType.FLOAT32.setFromDouble(recv, 0, 70, 1e6);
            DataType.FLOAT32.setFromDouble(recv, 0, 5, Double.NaN);
            assertEquals(2, d.countWrong(recv, 1, count));
        }
    }

    @Test
    void integerAverageTruncatesLikeTheLibrary() {
        CheckData d = new CheckData(PerfCollective.ALLREDUCE, DataType.INT32, ReduceOp.AVG, 3, 0);
        double sum = d.input(0, 7) + d.input(1, 7) + d.input(2, 7);
        assertEquals(sum / 3, d.expected(0, 10, 7), 1e-12);
    }
}
