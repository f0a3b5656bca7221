package dev.panamax.collectives.internal.runtime;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * Argument checks made on the calling rank before any rank blocks; every message names what is
 * wrong. One per communicator (the checks that depend on its rank and size); the buffer and
 * overlap helpers are static.
 */
final class ArgumentChecks {
    private final int rank;
    private final int size;

    ArgumentChecks(int rank, int size) {
        this.rank = rank;
        this.size = size;
    }

    void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        reduction(type, op);
        buffer("send", send, count, type, false);
        buffer("recv", recv, count, type, true);
        sameOrDisjoint(send, recv, "allReduce");
    }

    void reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        reduction(type, op);
        buffer("send", send, times(recvCount, size, "recvCount * size"), type, false);
        buffer("recv", recv, recvCount, type, true);
        inPlaceBlock(send, recv, recvCount * type.byteSize(), rank, "reduceScatter", "recv", "send");
    }

    void allGather(MemorySegment send, MemorySegment recv, long sendCount, DataType type) {
        Objects.requireNonNull(type, "type");
        buffer("send", send, sendCount, type, false);
        buffer("recv", recv, times(sendCount, size, "sendCount * size"), type, true);
        inPlaceBlock(recv, send, sendCount * type.byteSize(), rank, "allGather", "send", "recv");
    }

    void broadcast(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        Objects.requireNonNull(type, "type");
        rankIndex(root, "root");
        if (rank == root) {
            buffer("send", send, count, type, false);
            sameOrDisjoint(send, recv, "broadcast");
        }
        buffer("recv", recv, count, type, true);
    }

    void reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        reduction(type, op);
        rankIndex(root, "root");
        buffer("send", send, count, type, false);
        if (rank == root) {
            buffer("recv", recv, count, type, true);
            sameOrDisjoint(send, recv, "reduce");
        }
    }

    void allToAll(MemorySegment send, MemorySegment recv, long count, DataType type) {
        Objects.requireNonNull(type, "type");
        long total = times(count, size, "count * size");
        buffer("send", send, total, type, false);
        buffer("recv", recv, total, type, true);
        if (total > 0 && overlaps(send, recv)) {
            throw new IllegalArgumentException("allToAll: send and recv overlap; all-to-all has no in-place form");
        }
    }

    void pointToPoint(MemorySegment buffer, long count, DataType type, int peer, boolean writable) {
        Objects.requireNonNull(type, "type");
        rankIndex(peer, "peer");
        if (peer == rank) {
            throw new IllegalArgumentException((writable ? "recv from" : "send to") + " rank " + rank + " itself");
        }
        buffer("buffer", buffer, count, type, writable);
    }

    /** {@code r} is a rank of this communicator; {@code what} names it in the error (root, peer). */
    void rankIndex(int r, String what) {
        if (r < 0 || r >= size) {
            throw new IllegalArgumentException(what + " " + r + " is not a rank of this communicator (size " + size
                    + ")");
        }
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
        if (s == null) {
            throw new NullPointerException(name + " buffer"); // built only when thrown: checks run on every call
        }
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
            throw new IllegalArgumentException("count " + count + " of " + type.canonicalName()
                    + " overflows a byte size");
        }
        if (s.byteSize() < bytes) {
            throw new IllegalArgumentException(name + " buffer holds " + s.byteSize() + " bytes, fewer than the "
                    + bytes
                    + " bytes of " + count + " " + type.canonicalName() + " elements");
        }
        if (bytes > 0 && s.maxByteAlignment() < type.byteSize()) {
            throw new IllegalArgumentException(name + " buffer at 0x" + Long.toHexString(s.address())
                    + " is misaligned for "
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
            throw new IllegalArgumentException(collective
                    + ": send and recv buffers overlap without being the same buffer (in place)");
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
                + " but is not block " + rank + " of it (in place means " + smallName + " = " + bigName
                + " block rank)");
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

    /** A pre-multiplied sum scales in the type's own precision: floating-point types only. */
    static void preMulSum(String call, DataType type) {
        Objects.requireNonNull(type, "type");
        if (!type.isFloatingPoint()) {
            throw new IllegalArgumentException(call + ": floating-point types only, not " + type.canonicalName());
        }
    }
}
