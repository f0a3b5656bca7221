package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import dev.panamax.testing.Reference;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The contract every transport meets: each collective, in place and out of place, over ranks
 * {1,2,3,4,5,7,8} x counts {0, 1, 2, n-1, a prime > n, 2^20+3} x all types x all ops, checked
 * element by element against {@link Reference}. Ranks are threads; the shm and tcp groups still
 * talk through real shared memory and sockets. The large count runs every type with SUM and every
 * op with float32 (the full product would take minutes on two cores without testing more code).
 */
class CollectiveContractTest {
    static final int[] RANKS = {1, 2, 3, 4, 5, 7, 8};
    static final long LARGE = (1 << 20) + 3;

    static Stream<Arguments> grid() {
        List<Arguments> out = new ArrayList<>();
        for (Ranks.Transport t : Ranks.Transport.values()) {
            if (!Ranks.selected(t)) {
                continue;
            }
            for (int n : RANKS) {
                out.add(Arguments.of(t, n));
            }
        }
        return out.stream();
    }

    static long[] counts(int n) {
        return new long[]{0, 1, 2, Math.max(0, n - 1), 13, LARGE};
    }

    static boolean included(long count, DataType type, ReduceOp op) {
        return count != LARGE || op == ReduceOp.SUM || type == DataType.FLOAT32;
    }

    @ParameterizedTest(name = "{0} x {1} ranks")
    @MethodSource("grid")
    void everyCollectiveMatchesTheReference(Ranks.Transport transport, int n) {
        List<Communicator> comms = transport.open(n);
        List<String> failures = Collections.synchronizedList(new ArrayList<>());
        try {
            RankThreads.run(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    for (long count : counts(n)) {
                        for (DataType type : DataType.values()) {
                            for (ReduceOp op : ReduceOp.values()) {
                                if (included(count, type, op)) {
                                    allReduce(c, arena, count, type, op, failures);
                                    reduceScatter(c, arena, count, type, op, failures);
                                    reduce(c, arena, count, type, op, failures);
                                }
                            }
                            if (included(count, type, ReduceOp.SUM)) {
                                allGather(c, arena, count, type, failures);
                                broadcast(c, arena, count, type, failures);
                            }
                        }
                    }
                    c.barrier();
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
        assertEquals(List.of(), failures.size() > 10 ? failures.subList(0, 10) : failures);
    }

    static Stream<Arguments> midSizeGrid() {
        List<Arguments> out = new ArrayList<>();
        for (Ranks.Transport t : Ranks.Transport.values()) {
            if (Ranks.selected(t)) {
                for (int n : new int[]{3, 4, 8}) {
                    out.add(Arguments.of(t, n));
                }
            }
        }
        return out.stream();
    }

    /**
     * Mid sizes, where the all-reduce switches algorithm (recursive halving/doubling on
     * power-of-two groups, the ring otherwise): counts whose halves and chunks are uneven.
     */
    @ParameterizedTest(name = "{0} x {1} ranks")
    @MethodSource("midSizeGrid")
    void midSizeAllReduceMatchesTheReference(Ranks.Transport transport, int n) {
        List<Communicator> comms = transport.open(n);
        List<String> failures = Collections.synchronizedList(new ArrayList<>());
        try {
            RankThreads.run(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    for (long count : new long[]{8193, 100_003, 524_287}) {
                        for (DataType type : DataType.values()) {
                            for (ReduceOp op : ReduceOp.values()) {
                                allReduce(c, arena, count, type, op, failures);
                            }
                        }
                    }
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
        assertEquals(List.of(), failures.size() > 10 ? failures.subList(0, 10) : failures);
    }

    static String tag(Communicator c, String what, long count, DataType type, ReduceOp op) {
        return what + " rank " + c.rank() + "/" + c.size() + " count " + count + " " + type.canonicalName()
                + (op == null ? "" : " " + op);
    }

    static void allReduce(Communicator c, Arena arena, long count, DataType type, ReduceOp op, List<String> failures) {
        int n = c.size();
        long bytes = count * type.byteSize();
        MemorySegment send = arena.allocate(Math.max(1, bytes), 64);
        MemorySegment recv = arena.allocate(Math.max(1, bytes), 64);
        Reference.fill(send, 0, count, c.rank(), type, op);
        c.allReduce(send, recv, count, type, op);
        addIfWrong(failures, Reference.check(recv, 0, count, n, type, op, tag(c, "allreduce out-of-place", count, type,
                op)));
        // In place, from a buffer of the communicator's allocator (zero-copy path on shm).
        MemorySegment buf = c.allocate(bytes);
        Reference.fill(buf, 0, count, c.rank(), type, op);
        c.allReduce(buf, count, type, op);
        addIfWrong(failures, Reference.check(buf, 0, count, n, type, op, tag(c, "allreduce in-place", count, type,
                op)));
        c.free(buf);
    }

    private static long blockCount(long count, int n) {
        return count == LARGE ? (count + n - 1) / n : count;
    }

    static void reduceScatter(Communicator c, Arena arena, long count, DataType type, ReduceOp op,
            List<String> failures) {
        int n = c.size();
        long block = blockCount(count, n);
        long e = type.byteSize();
        MemorySegment send = arena.allocate(Math.max(1, n * block * e), 64);
        MemorySegment recv = arena.allocate(Math.max(1, block * e), 64);
        // Element j of block b has global index b*block + j.
        Reference.fill(send, 0, n * block, c.rank(), type, op);
        c.reduceScatter(send, recv, block, type, op);
        addIfWrong(failures, checkBlock(recv, c.rank() * block, block, n, type, op, tag(c, "reducescatter out-of-place",
                block, type, op)));
        // In place: recv is block rank of send.
        Reference.fill(send, 0, n * block, c.rank(), type, op);
        MemorySegment own = send.asSlice(c.rank() * block * e, block * e);
        c.reduceScatter(send, own, block, type, op);
        addIfWrong(failures, checkBlock(own, c.rank() * block, block, n, type, op, tag(c, "reducescatter in-place",
                block, type, op)));
    }

    static String checkBlock(MemorySegment s, long firstIndex, long count, int n, DataType type, ReduceOp op,
            String what) {
        for (long j = 0; j < count; j++) {
            double want = Reference.expected(firstIndex + j, n, type, op);
            double got = type.getAsDouble(s, 0, j);
            double tol = Reference.tolerance(type) * Math.max(1, Math.abs(want));
            if (Math.abs(got - want) > tol) {
                return what + ": element " + j + " is " + got + ", expected " + want;
            }
        }
        return null;
    }

    static void allGather(Communicator c, Arena arena, long count, DataType type, List<String> failures) {
        int n = c.size();
        long block = blockCount(count, n);
        long e = type.byteSize();
        MemorySegment send = arena.allocate(Math.max(1, block * e), 64);
        MemorySegment recv = arena.allocate(Math.max(1, n * block * e), 64);
        Reference.fill(send, 0, block, c.rank(), type, ReduceOp.SUM);
        c.allGather(send, recv, block, type);
        addIfWrong(failures, checkGathered(recv, block, n, type, tag(c, "allgather out-of-place", block, type, null)));
        recv.fill((byte) 0);
        Reference.fill(recv, c.rank() * block * e, block, c.rank(), type, ReduceOp.SUM);
        c.allGather(recv.asSlice(c.rank() * block * e, block * e), recv, block, type);
        addIfWrong(failures, checkGathered(recv, block, n, type, tag(c, "allgather in-place", block, type, null)));
    }

    private static String checkGathered(MemorySegment recv, long block, int n, DataType type, String what) {
        for (int r = 0; r < n; r++) {
            for (long j = 0; j < block; j++) {
                double want = type.getAsDouble(valueSegment(r, j, type), 0, 0);
                double got = type.getAsDouble(recv, r * block * type.byteSize(), j);
                if (got != want) {
                    return what + ": block " + r + " element " + j + " is " + got + ", expected " + want;
                }
            }
        }
        return null;
    }

    /** One element as the type stores it (so integer wrap and 16-bit rounding match exactly). */
    static MemorySegment valueSegment(int rank, long i, DataType type) {
        MemorySegment one = MemorySegment.ofArray(new long[1]);
        type.setFromDouble(one, 0, 0, Reference.input(rank, i, type, ReduceOp.SUM));
        return one;
    }

    static void broadcast(Communicator c, Arena arena, long count, DataType type, List<String> failures) {
        int n = c.size();
        long bytes = count * type.byteSize();
        int root = (int) (count % n);
        MemorySegment send = arena.allocate(Math.max(1, bytes), 64);
        MemorySegment recv = arena.allocate(Math.max(1, bytes), 64);
        Reference.fill(send, 0, count, root, type, ReduceOp.SUM);
        c.broadcast(send, recv, count, type, root);
        addIfWrong(failures, checkRankValues(recv, count, root, type, tag(c, "broadcast from " + root, count, type,
                null)));
        MemorySegment buf = c.allocate(bytes);
        if (c.rank() == root) {
            Reference.fill(buf, 0, count, root, type, ReduceOp.SUM);
        }
        c.broadcast(buf, count, type, root);
        addIfWrong(failures, checkRankValues(buf, count, root, type, tag(c, "broadcast in-place from " + root, count,
                type, null)));
        c.free(buf);
    }

    private static String checkRankValues(MemorySegment s, long count, int rank, DataType type, String what) {
        for (long j = 0; j < count; j++) {
            double want = type.getAsDouble(valueSegment(rank, j, type), 0, 0);
            double got = type.getAsDouble(s, 0, j);
            if (got != want) {
                return what + ": element " + j + " is " + got + ", expected " + want;
            }
        }
        return null;
    }

    static void reduce(Communicator c, Arena arena, long count, DataType type, ReduceOp op, List<String> failures) {
        int n = c.size();
        long bytes = count * type.byteSize();
        int root = n - 1 - (int) (count % n);
        MemorySegment send = arena.allocate(Math.max(1, bytes), 64);
        MemorySegment recv = arena.allocate(Math.max(1, bytes), 64);
        Reference.fill(send, 0, count, c.rank(), type, op);
        c.reduce(send, recv, count, type, op, root);
        if (c.rank() == root) {
            addIfWrong(failures, Reference.check(recv, 0, count, n, type, op, tag(c, "reduce to " + root, count, type,
                    op)));
        }
        Reference.fill(send, 0, count, c.rank(), type, op);
        c.reduce(send, send, count, type, op, root);
        if (c.rank() == root) {
            addIfWrong(failures, Reference.check(send, 0, count, n, type, op, tag(c, "reduce in-place to " + root,
                    count, type, op)));
        }
    }

    static void addIfWrong(List<String> failures, String failure) {
        if (failure != null) {
            failures.add(failure);
        }
    }
}
