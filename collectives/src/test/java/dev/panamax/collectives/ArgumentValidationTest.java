package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Bad arguments fail on the calling rank, before any message moves, with a message naming the problem. */
class ArgumentValidationTest {
    private List<Communicator> comms;
    private Communicator c;
    private Arena arena;

    @BeforeEach
    void open() {
        comms = Panamax.local(2, 2_000_000_000L);
        c = comms.get(0);
        arena = Arena.ofConfined();
    }

    @AfterEach
    void close() {
        arena.close();
        RankThreads.closeAll(comms);
    }

    private static void fails(Class<? extends Throwable> type, String fragment, Executable call) {
        Throwable t = assertThrows(type, call);
        assertTrue(t.getMessage().contains(fragment), () ->
                "message '" + t.getMessage() + "' should mention '" + fragment + "'");
    }

    @Test
    void tooSmallBuffer() {
        MemorySegment small = arena.allocate(12, 8);
        fails(IllegalArgumentException.class, "fewer than the 16 bytes",
                () -> c.allReduce(small, small, 4, DataType.FLOAT32, ReduceOp.SUM));
    }

    @Test
    void closedArena() {
        Arena other = Arena.ofConfined();
        MemorySegment s = other.allocate(64, 8);
        other.close();
        fails(IllegalStateException.class, "arena is closed", () ->
                c.allReduce(s, s, 4, DataType.FLOAT32, ReduceOp.SUM));
    }

    @Test
    void misaligned() {
        MemorySegment s = arena.allocate(64, 8).asSlice(1, 32);
        fails(IllegalArgumentException.class, "misaligned", () -> c.allReduce(s, s, 4, DataType.FLOAT32, ReduceOp.SUM));
    }

    @Test
    void heapSegment() {
        MemorySegment s = MemorySegment.ofArray(new float[4]);
        fails(IllegalArgumentException.class, "heap segment", () ->
                c.allReduce(s, s, 4, DataType.FLOAT32, ReduceOp.SUM));
    }

    @Test
    void readOnlyReceive() {
        MemorySegment s = arena.allocate(16, 8);
        fails(IllegalArgumentException.class, "read-only", () ->
                c.allReduce(s, s.asReadOnly(), 4, DataType.FLOAT32, ReduceOp.SUM));
    }

    @Test
    void negativeCount() {
        MemorySegment s = arena.allocate(16, 8);
        fails(IllegalArgumentException.class, "count must be >= 0", () ->
                c.allReduce(s, s, -1, DataType.FLOAT32, ReduceOp.SUM));
    }

    @Test
    void overflowingCount() {
        MemorySegment s = arena.allocate(16, 8);
        fails(IllegalArgumentException.class, "overflows", () ->
                c.reduceScatter(s, s, Long.MAX_VALUE / 2, DataType.FLOAT32, ReduceOp.SUM));
    }

    @Test
    void rootOutOfRange() {
        MemorySegment s = arena.allocate(16, 8);
        fails(IllegalArgumentException.class, "root 2 is not a rank", () -> c.broadcast(s, s, 4, DataType.FLOAT32, 2));
        fails(IllegalArgumentException.class, "root -1 is not a rank", () ->
                c.reduce(s, s, 4, DataType.FLOAT32, ReduceOp.SUM, -1));
    }

    @Test
    void partiallyOverlappingBuffers() {
        MemorySegment s = arena.allocate(64, 8);
        fails(IllegalArgumentException.class, "overlap", () ->
                c.allReduce(s.asSlice(0, 32), s.asSlice(16, 32), 8, DataType.FLOAT32, ReduceOp.SUM));
    }

    @Test
    void inPlaceReduceScatterMustUseOwnBlock() {
        MemorySegment s = arena.allocate(64, 8);
        // rank 0's block is bytes [0, 32); bytes [32, 64) is rank 1's.
        fails(IllegalArgumentException.class, "not block 0", () ->
                c.reduceScatter(s, s.asSlice(32, 32), 8, DataType.FLOAT32, ReduceOp.SUM));
    }

    @Test
    void nullArguments() {
        MemorySegment s = arena.allocate(16, 8);
        assertThrows(NullPointerException.class, () -> c.allReduce(s, s, 4, null, ReduceOp.SUM));
        assertThrows(NullPointerException.class, () -> c.allReduce(s, s, 4, DataType.FLOAT32, null));
        assertThrows(NullPointerException.class, () -> c.allReduce(null, s, 4, DataType.FLOAT32, ReduceOp.SUM));
    }

    @Test
    void asyncCallsValidateBeforeQueueing() {
        MemorySegment small = arena.allocate(8, 8);
        fails(IllegalArgumentException.class, "fewer than", () ->
                c.allReduceAsync(small, small, 4, DataType.FLOAT32, ReduceOp.SUM));
    }

    @Test
    void closedCommunicator() {
        MemorySegment s = arena.allocate(16, 8);
        c.close();
        fails(IllegalStateException.class, "closed", () -> c.allReduce(s, s, 4, DataType.FLOAT32, ReduceOp.SUM));
        fails(IllegalStateException.class, "closed", () -> c.allocate(16));
        c.close(); // idempotent
    }

    @Test
    void freeingForeignMemory() {
        MemorySegment s = arena.allocate(16, 8);
        fails(IllegalArgumentException.class, "not allocated by this communicator", () -> c.free(s));
    }
}
