package dev.panamax.testing;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

class ReferenceTest {
    @Test
    void expectedValuesOfSmallIntegers() {
        // Element 0: rank r contributes (31 r + 3) % 11 - 5, that is -2, -4 and 5 for ranks 0, 1 and 2.
        assertEquals(-2, Reference.input(0, 0, DataType.INT32, ReduceOp.SUM));
        assertEquals(-4, Reference.input(1, 0, DataType.INT32, ReduceOp.SUM));
        assertEquals(5, Reference.input(2, 0, DataType.INT32, ReduceOp.SUM));
        assertEquals(-1, Reference.expected(0, 3, DataType.FLOAT32, ReduceOp.SUM));
        assertEquals(-4, Reference.expected(0, 3, DataType.INT32, ReduceOp.MIN));
        assertEquals(5, Reference.expected(0, 3, DataType.INT64, ReduceOp.MAX));
        assertEquals(-4, Reference.expected(0, 3, DataType.INT8, ReduceOp.PROD), "-1 * 2 * 2: products of +-1, +-2");
        assertEquals(-1.0 / 3, Reference.expected(0, 3, DataType.FLOAT64, ReduceOp.AVG));
        assertEquals(0, Reference.expected(0, 3, DataType.INT32, ReduceOp.AVG), "integers truncate toward zero");
        assertEquals(0xff, Reference.wrap(-1, DataType.UINT8));
        assertEquals(-128, Reference.wrap(128, DataType.INT8));
    }

    @Test
    void checkNamesTheFirstWrongElementAndCountsThem() {
        try (Arena arena = Arena.ofConfined()) {
            for (DataType t : DataType.values()) {
                for (ReduceOp op : ReduceOp.values()) {
                    MemorySegment s = arena.allocate(10L * t.byteSize(), 8);
                    for (long i = 0; i < 10; i++) {
                        t.setFromDouble(s, 0, i, Reference.expected(i, 4, t, op));
                    }
                    assertNull(Reference.check(s, 0, 10, 4, t, op, "recv"), t + " " + op);
                }
            }
            MemorySegment s = arena.allocate(40, 8);
            Reference.fill(s, 0, 10, 0, DataType.INT32, ReduceOp.SUM);
            // One rank's inputs are the reduction of one rank.
            assertNull(Reference.check(s, 0, 10, 1, DataType.INT32, ReduceOp.SUM, "recv"));
            DataType.INT32.setFromDouble(s, 0, 3, 1000);
            DataType.INT32.setFromDouble(s, 0, 7, 1000);
            assertEquals("recv: element 3 is 1000.0, expected " + Reference.expected(3, 1, DataType.INT32,
                    ReduceOp.SUM) + " (2 wrong of 10)", Reference.check(s, 0, 10, 1, DataType.INT32, ReduceOp.SUM,
                    "recv"));
        }
    }
}
