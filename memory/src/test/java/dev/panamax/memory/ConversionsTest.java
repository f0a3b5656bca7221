package dev.panamax.memory;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link Conversions} against {@link Half}'s scalar conversions, element by element, at offsets and odd counts. */
class ConversionsTest {
    private static final int COUNT = 5003; // more than two staging chunks, and odd

    private static float value(int i) {
        SplittableRandom r = new SplittableRandom(i);
        return switch (i % 7) {
            case 0 -> Float.NaN;
            case 1 -> (float) r.nextDouble(-70000, 70000); // past float16's range
            case 2 -> (float) (r.nextGaussian() * 1e-6);    // float16 subnormals
            default -> (float) r.nextGaussian();
        };
    }

    private static short wireBits(DataType wire, float f) {
        return wire == DataType.BFLOAT16 ? Half.floatToBfloat16(f) : Half.floatToFloat16(f);
    }

    private static float wireValue(DataType wire, short bits) {
        return wire == DataType.BFLOAT16 ? Half.bfloat16ToFloat(bits) : Half.float16ToFloat(bits);
    }

    @Test
    void narrowAndWidenAsTheScalarConversionsDo() {
        for (DataType type : new DataType[] {DataType.FLOAT32, DataType.FLOAT64}) {
            for (DataType wire : new DataType[] {DataType.BFLOAT16, DataType.FLOAT16}) {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment src = arena.allocate((COUNT + 3) * type.byteSize());
                    MemorySegment narrow = arena.allocate((COUNT + 5) * 2L);
                    MemorySegment wide = arena.allocate((COUNT + 2) * type.byteSize());
                    for (int i = 0; i < COUNT; i++) {
                        type.setFromDouble(src, 0, i + 3, value(i));
                    }
                    Conversions.narrow(type, src, 3, wire, narrow, 5, COUNT);
                    Conversions.widen(wire, narrow, 5, type, wide, 2, COUNT);
                    for (int i = 0; i < COUNT; i++) {
                        short bits = narrow.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i + 5);
                        assertEquals(wireBits(wire, value(i)), bits, type + " to " + wire + " element " + i);
                        double back = type.getAsDouble(wide, 0, i + 2);
                        assertEquals(wireValue(wire, bits), back, 0.0, wire + " to " + type + " element " + i);
                    }
                }
            }
        }
    }

    @Test
    void accumulateFoldsWidenedElementsInTheWideType() {
        for (DataType type : new DataType[] {DataType.FLOAT32, DataType.FLOAT64}) {
            for (ReduceOp op : ReduceOp.values()) {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment acc = arena.allocate(COUNT * type.byteSize());
                    MemorySegment src = arena.allocate(COUNT * 2L);
                    for (int i = 0; i < COUNT; i++) {
                        type.setFromDouble(acc, 0, i, value(i + 1));
                        src.setAtIndex(ValueLayout.JAVA_SHORT, i, Half.floatToBfloat16(value(i + 11)));
                    }
                    Conversions.accumulate(DataType.BFLOAT16, src, 0, type, acc, 0, COUNT, op);
                    for (int i = 0; i < COUNT; i++) {
                        double a = type == DataType.FLOAT32 ? value(i + 1) : (double) value(i + 1);
                        double x = Half.bfloat16ToFloat(Half.floatToBfloat16(value(i + 11)));
                        double want = switch (op) {
                            case SUM, AVG -> type == DataType.FLOAT32 ? (float) a + (float) x : a + x;
                            case PROD -> type == DataType.FLOAT32 ? (float) a * (float) x : a * x;
                            case MIN -> Math.min(a, x);
                            case MAX -> Math.max(a, x);
                        };
                        double got = type.getAsDouble(acc, 0, i);
                        assertTrue(Double.compare(want, got) == 0 || (Double.isNaN(want) && Double.isNaN(got)),
                                type + " " + op + " element " + i + ": " + got + ", want " + want);
                    }
                }
            }
        }
    }

    @Test
    void onlyFloatToSixteenBitConversionsAreTaken() {
        MemorySegment s = Arena.ofAuto().allocate(64);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Conversions.narrow(DataType.INT32, s, 0, DataType.BFLOAT16, s, 0, 1));
        assertTrue(e.getMessage().contains("int32"), e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> Conversions.widen(DataType.FLOAT32, s, 0, DataType.FLOAT64, s, 0, 1));
        assertThrows(IllegalArgumentException.class,
                () -> Conversions.narrow(DataType.FLOAT32, s, 0, DataType.FLOAT16, s, 0, -1));
        Conversions.narrow(DataType.FLOAT32, s, 0, DataType.FLOAT16, s, 0, 0);
    }
}
