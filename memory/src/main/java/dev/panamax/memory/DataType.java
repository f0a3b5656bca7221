package dev.panamax.memory;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Locale;

/**
 * Element types of collective buffers. Multi-byte types are stored in native byte order.
 * The 16-bit floating types are reduced in float precision and rounded back to nearest-even.
 */
public enum DataType {
    FLOAT32(4, "float32", "float", "f32", "fp32"),
    FLOAT64(8, "float64", "double", "f64", "fp64"),
    INT32(4, "int32", "int", "i32"),
    INT64(8, "int64", "long", "i64"),
    INT8(1, "int8", "char", "i8"),
    UINT8(1, "uint8", "u8"),
    FLOAT16(2, "float16", "half", "f16", "fp16"),
    BFLOAT16(2, "bfloat16", "bf16");

    private final int byteSize;
    private final String[] names;

    DataType(int byteSize, String... names) {
        this.byteSize = byteSize;
        this.names = names;
    }

    /** Size of one element in bytes. */
    public int byteSize() {
        return byteSize;
    }

    /** The canonical lower-case name ({@code float32}, {@code bfloat16}, ...). */
    public String canonicalName() {
        return names[0];
    }

    /** True for the floating-point types. */
    public boolean isFloatingPoint() {
        return this == FLOAT32 || this == FLOAT64 || this == FLOAT16 || this == BFLOAT16;
    }

    /** An unaligned value layout of the storage type (float16/bfloat16 are stored as shorts). */
    public ValueLayout storageLayout() {
        return switch (this) {
            case FLOAT32 -> ValueLayout.JAVA_FLOAT_UNALIGNED;
            case FLOAT64 -> ValueLayout.JAVA_DOUBLE_UNALIGNED;
            case INT32 -> ValueLayout.JAVA_INT_UNALIGNED;
            case INT64 -> ValueLayout.JAVA_LONG_UNALIGNED;
            case INT8, UINT8 -> ValueLayout.JAVA_BYTE;
            case FLOAT16, BFLOAT16 -> ValueLayout.JAVA_SHORT_UNALIGNED;
        };
    }

    /** Parses a name as nccl-tests and numpy spell them ({@code float}, {@code half}, {@code bf16}, ...). */
    public static DataType parse(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        for (DataType t : values()) {
            for (String alias : t.names) {
                if (alias.equals(n)) {
                    return t;
                }
            }
        }
        throw new IllegalArgumentException("unknown data type '" + name
                + "'; known: float32, float64, int32, int64, int8, uint8, float16, bfloat16");
    }

    /** Reads element {@code index} (counted from byte {@code offset}) widened to double. */
    public double getAsDouble(MemorySegment segment, long offset, long index) {
        long at = offset + index * byteSize;
        return switch (this) {
            case FLOAT32 -> segment.get(ValueLayout.JAVA_FLOAT_UNALIGNED, at);
            case FLOAT64 -> segment.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, at);
            case INT32 -> segment.get(ValueLayout.JAVA_INT_UNALIGNED, at);
            case INT64 -> segment.get(ValueLayout.JAVA_LONG_UNALIGNED, at);
            case INT8 -> segment.get(ValueLayout.JAVA_BYTE, at);
            case UINT8 -> Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, at));
            case FLOAT16 -> Half.float16ToFloat(segment.get(ValueLayout.JAVA_SHORT_UNALIGNED, at));
            case BFLOAT16 -> Half.bfloat16ToFloat(segment.get(ValueLayout.JAVA_SHORT_UNALIGNED, at));
        };
    }

    /** Reads element {@code index} as a long (integer types only; exact). */
    public long getAsLong(MemorySegment segment, long offset, long index) {
        long at = offset + index * byteSize;
        return switch (this) {
            case INT32 -> segment.get(ValueLayout.JAVA_INT_UNALIGNED, at);
            case INT64 -> segment.get(ValueLayout.JAVA_LONG_UNALIGNED, at);
            case INT8 -> segment.get(ValueLayout.JAVA_BYTE, at);
            case UINT8 -> Byte.toUnsignedInt(segment.get(ValueLayout.JAVA_BYTE, at));
            default -> throw new UnsupportedOperationException(this + " is not an integer type");
        };
    }

    /** Writes element {@code index}, converting from double (rounding to nearest-even for floats, truncating for
     * integers). */
    public void setFromDouble(MemorySegment segment, long offset, long index, double value) {
        long at = offset + index * byteSize;
        switch (this) {
            case FLOAT32 -> segment.set(ValueLayout.JAVA_FLOAT_UNALIGNED, at, (float) value);
            case FLOAT64 -> segment.set(ValueLayout.JAVA_DOUBLE_UNALIGNED, at, value);
            case INT32 -> segment.set(ValueLayout.JAVA_INT_UNALIGNED, at, (int) (long) value);
            case INT64 -> segment.set(ValueLayout.JAVA_LONG_UNALIGNED, at, (long) value);
            case INT8, UINT8 -> segment.set(ValueLayout.JAVA_BYTE, at, (byte) (long) value);
            case FLOAT16 -> segment.set(ValueLayout.JAVA_SHORT_UNALIGNED, at, Half.floatToFloat16((float) value));
            case BFLOAT16 -> segment.set(ValueLayout.JAVA_SHORT_UNALIGNED, at, Half.floatToBfloat16((float) value));
        }
    }
}
