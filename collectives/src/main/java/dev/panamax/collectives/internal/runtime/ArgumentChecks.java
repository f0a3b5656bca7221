package dev.panamax.collectives.internal.runtime;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/** Argument checks made before any rank blocks; every message names what is wrong. */
final class ArgumentChecks {
    private ArgumentChecks() {
    }

    static void reduction(DataType type, ReduceOp op) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(op, "op");
    }

    static long times(long count, int size, String what) {
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0: " + count);
        }
        try {
            return Math.multiplyExact(count, (long) size);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(what + " overflows: " + count + " * " + size);
        }
    }

    static void buffer(String name, MemorySegment s, long count, DataType type, boolean writable) {
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0: " + count);
        }
        Objects.requireNonNull(s, name + " buffer");
        if (!s.scope().isAlive()) {
            throw new IllegalStateException(name + " buffer's arena is closed");
        }
        if (!s.isNative()) {
            throw new IllegalArgumentException(name + " buffer is a heap segment; collectives need native memory "
                    + "(an Arena segment, or Communicator.allocate for zero-copy shared memory)");
        }
        long bytes;
        try {
            bytes = Math.multiplyExact(count, (long) type.byteSize());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("count " + count + " of " + type.canonicalName() + " overflows a byte size");
        }
        if (s.byteSize() < bytes) {
            throw new IllegalArgumentException(name + " buffer holds " + s.byteSize() + " bytes, fewer than the " + bytes
                    + " bytes of " + count + " " + type.canonicalName() + " elements");
        }
        if (bytes > 0 && s.maxByteAlignment() < type.byteSize()) {
            throw new IllegalArgumentException(name + " buffer at 0x" + Long.toHexString(s.address()) + " is misaligned for "
                    + type.canonicalName() + " (needs " + type.byteSize() + "-byte alignment)");
        }
        if (writable && s.isReadOnly() && bytes > 0) {
            throw new IllegalArgumentException(name + " buffer is read-only");
        }
    }

    /** Send and receive must be the same memory (in place) or not overlap at all. */
    static void sameOrDisjoint(MemorySegment a, MemorySegment b, String collective) {
        if (a == null || b == null || isSameStart(a, b)) {
            return;
        }
        if (overlaps(a, b)) {
            throw new IllegalArgumentException(collective + ": send and recv buffers overlap without being the same buffer (in place)");
        }
    }

    /**
     * For reduce-scatter and all-gather: {@code small} (one block) either is block {@code rank} of
     * {@code big} (in place) or does not overlap it.
     */
    static void inPlaceBlock(MemorySegment big, MemorySegment small, long blockBytes, int rank, String collective,
                             String smallName, String bigName) {
        if (!overlaps(big, small)) {
            return;
        }
        boolean sameMemory = big.heapBase().equals(small.heapBase());
        if (sameMemory && small.address() == big.address() + rank * blockBytes) {
            return;
        }
        throw new IllegalArgumentException(collective + ": " + smallName + " overlaps " + bigName
                + " but is not block " + rank + " of it (in place means " + smallName + " = " + bigName + " block rank)");
    }

    private static boolean isSameStart(MemorySegment a, MemorySegment b) {
        return a.heapBase().equals(b.heapBase()) && a.address() == b.address();
    }

    static boolean overlaps(MemorySegment a, MemorySegment b) {
        if (a.byteSize() == 0 || b.byteSize() == 0) {
            return false;
        }
        return a.asOverlappingSlice(b).isPresent();
    }
}
