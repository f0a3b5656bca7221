package dev.panamax.collectives;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Objects;

/** {@link ItemReducer#ofNative}: a C function called through one downcall per fold. */
final class NativeItemReducer implements ItemReducer {
    /** {@code void f(const void* in, void* inout, int32_t itemBytes, int64_t itemCount)}, target first. */
    private static final MethodHandle CALL = Linker.nativeLinker().downcallHandle(
            FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_INT, JAVA_LONG));

    private final MemorySegment function;
    private final int itemBytes;

    NativeItemReducer(MemorySegment function, int itemBytes) {
        Objects.requireNonNull(function, "function");
        if (function.equals(MemorySegment.NULL)) {
            throw new IllegalArgumentException("ItemReducer.ofNative: the function pointer is NULL");
        }
        if (itemBytes < 1) {
            throw new IllegalArgumentException("ItemReducer.ofNative: itemBytes must be >= 1: " + itemBytes);
        }
        this.function = function;
        this.itemBytes = itemBytes;
    }

    @Override
    public void reduce(MemorySegment in, MemorySegment inout, long itemCount) {
        long bytes = Math.multiplyExact(itemCount, (long) itemBytes);
        if (!in.isNative() || !inout.isNative()) {
            throw new IllegalArgumentException("a native item reducer needs native memory, not heap arrays");
        }
        if (in.byteSize() < bytes || inout.byteSize() < bytes) {
            throw new IndexOutOfBoundsException("reducing " + itemCount + " items of " + itemBytes
                    + " bytes in segments of " + in.byteSize() + " and " + inout.byteSize() + " bytes");
        }
        try {
            CALL.invokeExact(function, in, inout, itemBytes, itemCount);
        } catch (Throwable t) {
            throw new IllegalStateException("the native item reducer at 0x" + Long.toHexString(function.address())
                    + " failed: " + t, t);
        }
    }

    @Override
    public String toString() {
        return "native item reducer at 0x" + Long.toHexString(function.address()) + " (" + itemBytes
                + "-byte items)";
    }
}
