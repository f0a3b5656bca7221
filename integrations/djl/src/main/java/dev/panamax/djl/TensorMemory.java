package dev.panamax.djl;

import ai.djl.ndarray.NDArray;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A DJL tensor's own memory as a {@link MemorySegment}, when the engine exposes it. On CPU,
 * {@code NDArray.toByteBuffer(true)} of a contiguous tensor is a direct buffer over the tensor's data
 * (PyTorch: the tensor's {@code data_ptr()}); otherwise it is a copy. A copy may be direct too, so the
 * buffer's kind does not tell: {@link #view} writes through the segment and reads the element back
 * through the tensor to prove that they are the same memory.
 */
final class TensorMemory {
    private TensorMemory() {
    }

    /**
     * The segment over {@code array}'s float32 elements, or null when the engine hands out a copy (a
     * non-contiguous or non-CPU tensor, another byte order).
     */
    static MemorySegment view(NDArray array) {
        MemorySegment s = directSegment(array);
        if (s == null || s.byteSize() < Float.BYTES) {
            return s; // nothing to probe in an empty tensor
        }
        long[] first = new long[array.getShape().dimension()];
        float original = s.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0);
        float marker = original == 1f ? 2f : 1f;
        s.set(ValueLayout.JAVA_FLOAT_UNALIGNED, 0, marker);
        try {
            return array.getFloat(first) == marker ? s : null;
        } finally {
            s.set(ValueLayout.JAVA_FLOAT_UNALIGNED, 0, original);
        }
    }

    /** The address of the buffer the engine hands out for {@code array} now, or -1 when it is not direct. */
    static long address(NDArray array) {
        MemorySegment s = directSegment(array);
        return s == null ? -1 : s.address();
    }

    private static MemorySegment directSegment(NDArray array) {
        ByteBuffer b = array.toByteBuffer(true);
        if (!b.isDirect() || b.order() != ByteOrder.nativeOrder()) {
            return null;
        }
        long bytes = array.size() * Float.BYTES;
        MemorySegment s = MemorySegment.ofBuffer(b);
        return s.byteSize() == bytes ? s : null;
    }
}
