package dev.panamax.memory;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DataTypeTest {
    @Test
    void sizesLayoutsAndNames() {
        for (DataType t : DataType.values()) {
            assertEquals(t.byteSize(), t.storageLayout().byteSize(), t.toString());
            assertEquals(1, t.storageLayout().byteAlignment(), t + " layout is unaligned");
            assertEquals(t, DataType.parse(t.canonicalName()));
            assertEquals(t, DataType.parse(t.canonicalName().toUpperCase()));
        }
        assertEquals(DataType.FLOAT32, DataType.parse("float"));
        assertEquals(DataType.FLOAT16, DataType.parse("half"));
        assertEquals(DataType.BFLOAT16, DataType.parse("bf16"));
        assertEquals(DataType.INT8, DataType.parse("char"));
        assertEquals(DataType.UINT8, DataType.parse("u8"));
        var e = assertThrows(IllegalArgumentException.class, () -> DataType.parse("complex64"));
        assertTrue(e.getMessage().contains("complex64"));
        assertTrue(DataType.BFLOAT16.isFloatingPoint());
        assertFalse(DataType.UINT8.isFloatingPoint());
    }

    @Test
    void elementHelpers() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(64);
            for (DataType t : DataType.values()) {
                t.setFromDouble(s, 1, 2, 100);
                assertEquals(100.0, t.getAsDouble(s, 1, 2), t.toString());
                if (!t.isFloatingPoint()) {
                    assertEquals(100, t.getAsLong(s, 1, 2), t.toString());
                } else {
                    assertThrows(UnsupportedOperationException.class, () -> t.getAsLong(s, 0, 0));
                }
            }
            DataType.UINT8.setFromDouble(s, 0, 0, 255);
            assertEquals(255.0, DataType.UINT8.getAsDouble(s, 0, 0));
            assertEquals(-1.0, DataType.INT8.getAsDouble(s, 0, 0));
            // 1 + 2^-8: tie between 1 and 1 + 2^-7, rounds to even (1)
            DataType.BFLOAT16.setFromDouble(s, 0, 0, 1.00390625);
            assertEquals(1.0, DataType.BFLOAT16.getAsDouble(s, 0, 0));
        }
    }

    @Test
    void reduceOps() {
        assertEquals(ReduceOp.SUM, ReduceOp.AVG.accumulating());
        for (ReduceOp op : ReduceOp.values()) {
            if (op != ReduceOp.AVG) assertEquals(op, op.accumulating());
            assertEquals(op, ReduceOp.parse(op.name().toLowerCase()));
        }
        assertThrows(IllegalArgumentException.class, () -> ReduceOp.parse("xor"));
    }
}
