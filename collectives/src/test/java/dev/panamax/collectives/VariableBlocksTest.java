package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import dev.panamax.testing.Reference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The variable-block collectives (reduce-scatter-v, all-gather-v; reduce-scatter-v, all-reduce and
 * reduce with a user reduction) on every transport of the contract suite and 1-8 ranks, element by element against
 * {@link Reference}: block lengths equal, with zeros, primes, one long block, and random; item counts
 * 0, 1, fewer than the ranks, a prime and a large one.
 */
class VariableBlocksTest {
    static Stream<Arguments> grid() {
        return CollectiveContractTest.grid();
    }

    /** Block-length patterns for n ranks, every rank computing the same ones. */
    static List<long[]> patterns(int n) {
        List<long[]> out = new ArrayList<>();
        out.add(new long[n]);
        long[] equal = new long[n];
        Arrays.fill(equal, 13);
        out.add(equal);
        long[] ramp = new long[n];
        for (int r = 0; r < n; r++) {
            ramp[r] = r % 3 == 1 ? 0 : 2L * r + 1;
        }
        out.add(ramp);
        long[] oneLong = new long[n];
        oneLong[n - 1] = (1 << 16) + 3;
        out.add(oneLong);
        SplittableRandom random = new SplittableRandom(n);
        long[] any = new long[n];
        for (int r = 0; r < n; r++) {
            any[r] = random.nextInt(0, 4000);
        }
        out.add(any);
        return out;
    }

    @ParameterizedTest(name = "{0} x {1} ranks")
    @MethodSource("grid")
    void everyVariableBlockCollectiveMatchesTheReference(Ranks.Transport transport, int n) {
        List<Communicator> comms = transport.open(n);
        List<String> failures = Collections.synchronizedList(new ArrayList<>());
        try {
            RankThreads.run(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    for (long[] counts : patterns(n)) {
                        for (DataType type : DataType.values()) {
                            for (ReduceOp op : ReduceOp.values()) {
                                if (type == DataType.FLOAT32 || op == ReduceOp.SUM) {
                                    reduceScatterV(c, arena, counts, type, op, failures);
                                }
                            }
                            allGatherV(c, arena, counts, type, failures);
                        }
                        itemReduceScatterV(c, arena, counts, failures);
                    }
                    for (long items : new long[] {0, 1, Math.max(0, n - 1), 13, 1001}) {
                        itemAllReduce(c, arena, items, failures);
                        itemReduce(c, arena, items, 0, false, failures);
                        itemReduce(c, arena, items, n - 1, true, failures);
                    }
                    c.barrier();
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
        assertEquals(List.of(), failures.subList(0, Math.min(10, failures.size())));
    }

    private static long[] offsets(long[] counts) {
        long[] off = new long[counts.length];
        for (int r = 1; r < counts.length; r++) {
            off[r] = off[r - 1] + counts[r - 1];
        }
        return off;
    }

    private static String what(Communicator c, String call, long[] counts, DataType type, ReduceOp op) {
        return call + " rank " + c.rank() + "/" + c.size() + " counts " + Arrays.toString(counts) + " "
                + type.canonicalName() + (op == null ? "" : " " + op);
    }

    static void reduceScatterV(Communicator c, Arena arena, long[] counts, DataType type, ReduceOp op,
            List<String> failures) {
        long e = type.byteSize();
        long total = Arrays.stream(counts).sum();
        long own = counts[c.rank()];
        long first = offsets(counts)[c.rank()];
        MemorySegment send = arena.allocate(Math.max(1, total * e), 64);
        MemorySegment recv = arena.allocate(Math.max(1, own * e), 64);
        // Element j of block b has global index offset(b) + j.
        Reference.fill(send, 0, total, c.rank(), type, op);
        c.reduceScatterV(send, recv, counts, type, op);
        addIfWrong(failures, CollectiveContractTest.checkBlock(recv, first, own, c.size(), type, op,
                what(c, "reduceScatterV", counts, type, op)), null);
        Reference.fill(send, 0, total, c.rank(), type, op);
        MemorySegment inPlace = send.asSlice(first * e, own * e);
        c.reduceScatterV(send, inPlace, counts, type, op);
        addIfWrong(failures, CollectiveContractTest.checkBlock(inPlace, first, own, c.size(), type, op,
                what(c, "reduceScatterV in place", counts, type, op)), null);
    }

    static void allGatherV(Communicator c, Arena arena, long[] counts, DataType type, List<String> failures) {
        long e = type.byteSize();
        long total = Arrays.stream(counts).sum();
        long[] off = offsets(counts);
        MemorySegment send = arena.allocate(Math.max(1, counts[c.rank()] * e), 64);
        MemorySegment recv = arena.allocate(Math.max(1, total * e), 64);
        Reference.fill(send, 0, counts[c.rank()], c.rank(), type, ReduceOp.SUM);
        c.allGatherV(send, recv, counts, type);
        addIfWrong(failures, gathered(recv, counts, off, type), what(c, "allGatherV", counts, type, null));
        recv.fill((byte) 0);
        Reference.fill(recv, off[c.rank()] * e, counts[c.rank()], c.rank(), type, ReduceOp.SUM);
        c.allGatherV(recv.asSlice(off[c.rank()] * e, counts[c.rank()] * e), recv, counts, type);
        addIfWrong(failures, gathered(recv, counts, off, type), what(c, "allGatherV in place", counts, type, null));
    }

    private static String gathered(MemorySegment recv, long[] counts, long[] off, DataType type) {
        for (int r = 0; r < counts.length; r++) {
            for (long j = 0; j < counts[r]; j++) {
                double want = type.getAsDouble(CollectiveContractTest.valueSegment(r, j, type), 0, 0);
                double got = type.getAsDouble(recv, off[r] * type.byteSize(), j);
                if (got != want) {
                    return "block " + r + " element " + j + " is " + got + ", expected " + want;
                }
            }
        }
        return null;
    }

    private static void addIfWrong(List<String> failures, String wrong, String what) {
        if (wrong != null) {
            failures.add(what == null ? wrong : what + ": " + wrong);
        }
    }

    /** Items of two longs; the reduction is not commutative, so the check also proves the rank order. */
    static final int ITEM_BYTES = 16;

    static final ItemReducer ORDERED = (in, inout, items) -> {
        for (long i = 0; i < items; i++) {
            long a = inout.get(ValueLayout.JAVA_LONG_UNALIGNED, i * ITEM_BYTES);
            long b = in.get(ValueLayout.JAVA_LONG_UNALIGNED, i * ITEM_BYTES);
            inout.set(ValueLayout.JAVA_LONG_UNALIGNED, i * ITEM_BYTES, a * 31 + b);
            long ca = inout.get(ValueLayout.JAVA_LONG_UNALIGNED, i * ITEM_BYTES + 8);
            long cb = in.get(ValueLayout.JAVA_LONG_UNALIGNED, i * ITEM_BYTES + 8);
            inout.set(ValueLayout.JAVA_LONG_UNALIGNED, i * ITEM_BYTES + 8, ca + cb);
        }
    };

    private static long item(int rank, long globalIndex) {
        return rank * 1_000_003L + globalIndex * 7 + 1;
    }

    static void itemReduceScatterV(Communicator c, Arena arena, long[] counts, List<String> failures) {
        itemReduceScatterV(c, arena, counts, ORDERED, failures);
    }

    static void itemReduceScatterV(Communicator c, Arena arena, long[] counts, ItemReducer reducer,
            List<String> failures) {
        long own = counts[c.rank()];
        MemorySegment send = items(c, arena, Arrays.stream(counts).sum());
        MemorySegment recv = arena.allocate(Math.max(1, own * ITEM_BYTES), 64);
        c.reduceScatterV(send, recv, counts, ITEM_BYTES, reducer);
        addIfWrong(failures, wrongFold(c, recv, offsets(counts)[c.rank()], own),
                what(c, "reduceScatterV(ItemReducer)", counts, DataType.UINT8, null));
    }

    /** {@code count} items of this rank: (item(rank, i), 1). */
    private static MemorySegment items(Communicator c, Arena arena, long count) {
        MemorySegment s = arena.allocate(Math.max(1, count * ITEM_BYTES), 64);
        for (long i = 0; i < count; i++) {
            s.set(ValueLayout.JAVA_LONG, i * ITEM_BYTES, item(c.rank(), i));
            s.set(ValueLayout.JAVA_LONG, i * ITEM_BYTES + 8, 1);
        }
        return s;
    }

    /**
     * Null when item j of {@code result} is the rank-order fold by ORDERED of every rank's item
     * {@code first + j}, counted once per rank, for j below {@code count}; else the first wrong item.
     */
    private static String wrongFold(Communicator c, MemorySegment result, long first, long count) {
        for (long j = 0; j < count; j++) {
            long want = item(0, first + j);
            for (int r = 1; r < c.size(); r++) {
                want = want * 31 + item(r, first + j);
            }
            long got = result.get(ValueLayout.JAVA_LONG, j * ITEM_BYTES);
            long contributions = result.get(ValueLayout.JAVA_LONG, j * ITEM_BYTES + 8);
            if (got != want || contributions != c.size()) {
                return "item " + j + " is (" + got + ", " + contributions + "), expected (" + want + ", " + c.size()
                        + ")";
            }
        }
        return null;
    }

    /** allReduce(ItemReducer) in place: every item is the rank-order fold of every rank's item, on every rank. */
    static void itemAllReduce(Communicator c, Arena arena, long items, List<String> failures) {
        MemorySegment buffer = items(c, arena, items);
        c.allReduce(buffer, items, ITEM_BYTES, ORDERED);
        addIfWrong(failures, wrongFold(c, buffer, 0, items),
                "allReduce(ItemReducer) rank " + c.rank() + "/" + c.size() + " " + items + " items");
    }

    /** reduce(ItemReducer) to {@code root}, in place there or not: root's items are the rank-order folds. */
    static void itemReduce(Communicator c, Arena arena, long items, int root, boolean inPlace, List<String> failures) {
        MemorySegment send = items(c, arena, items);
        MemorySegment recv = inPlace ? send : c.rank() == root ? arena.allocate(Math.max(1, items * ITEM_BYTES), 64)
                : MemorySegment.NULL;
        c.reduce(send, recv, items, ITEM_BYTES, ORDERED, root);
        if (c.rank() == root) {
            addIfWrong(failures, wrongFold(c, recv, 0, items), "reduce(ItemReducer) to " + root
                    + (inPlace ? " in place" : "") + ", rank " + c.rank() + "/" + c.size() + " " + items + " items");
        }
    }

    /** ORDERED as the C function {@code void f(const void*, void*, int32_t itemBytes, int64_t itemCount)}. */
    static void orderedUpcall(MemorySegment in, MemorySegment inout, int itemBytes, long itemCount) {
        if (itemBytes != ITEM_BYTES) {
            return; // leaves inout as it is: the check of the result fails
        }
        long bytes = itemCount * itemBytes;
        ORDERED.reduce(in.reinterpret(bytes), inout.reinterpret(bytes), itemCount);
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {1, 3, 4})
    void aNativeFunctionReducesLikeTheJavaOne(int n) throws ReflectiveOperationException {
        FunctionDescriptor signature = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG);
        MethodHandle target = MethodHandles.lookup().findStatic(VariableBlocksTest.class, "orderedUpcall",
                signature.toMethodType());
        List<Communicator> comms = Ranks.Transport.SHM.open(n);
        List<String> failures = Collections.synchronizedList(new ArrayList<>());
        try (Arena stubs = Arena.ofShared()) {
            // A C function pointer (an upcall stub here; a C library's symbol in real use).
            MemorySegment function = Linker.nativeLinker().upcallStub(target, signature, stubs);
            ItemReducer reducer = ItemReducer.ofNative(function, ITEM_BYTES);
            RankThreads.run(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    for (long[] counts : patterns(n)) {
                        itemReduceScatterV(c, arena, counts, reducer, failures);
                    }
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
        assertEquals(List.of(), failures.subList(0, Math.min(10, failures.size())));
        assertThrows(IllegalArgumentException.class, () -> ItemReducer.ofNative(MemorySegment.NULL, 8));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment some = arena.allocate(8);
            assertThrows(IllegalArgumentException.class, () -> ItemReducer.ofNative(some, 0));
            ItemReducer onHeap = ItemReducer.ofNative(some, 8);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> onHeap.reduce(MemorySegment.ofArray(new long[1]), some, 1));
            assertTrue(e.getMessage().contains("needs native memory"), e.getMessage());
        }
    }

    @Test
    void badBlockLengthsAndShortBuffersAreNamed() {
        List<Communicator> comms = Panamax.local(2);
        try {
            RankThreads.run(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment s = arena.allocate(64);
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                            () -> c.reduceScatterV(s, s, new long[] {1, 2, 3}, DataType.FLOAT32, ReduceOp.SUM));
                    assertTrue(e.getMessage().contains("3 counts for 2 ranks"), e.getMessage());
                    e = assertThrows(IllegalArgumentException.class,
                            () -> c.allGatherV(s, s, new long[] {1, -1}, DataType.FLOAT32));
                    assertTrue(e.getMessage().contains("rank 1 has a negative length"), e.getMessage());
                    e = assertThrows(IllegalArgumentException.class, () -> c.allReduce(s, 5, 16, ORDERED));
                    assertTrue(e.getMessage().contains("the buffer has 64 bytes, 5 items of 16 need 80"),
                            e.getMessage());
                    e = assertThrows(IllegalArgumentException.class, () -> c.allReduce(s, 1, 0, ORDERED));
                    assertTrue(e.getMessage().contains("itemBytes >= 1"), e.getMessage());
                    e = assertThrows(IllegalArgumentException.class, () -> c.reduce(s, s, 1, 16, ORDERED, 2));
                    assertTrue(e.getMessage().contains("root 2 is not a rank of 2"), e.getMessage());
                    e = assertThrows(IllegalArgumentException.class,
                            () -> c.reduceScatterV(s, s, new long[] {10, 10}, DataType.FLOAT32, ReduceOp.SUM));
                    assertTrue(e.getMessage().contains("send holds 64 bytes, its blocks need 80"), e.getMessage());
                    e = assertThrows(IllegalArgumentException.class,
                            () -> c.reduceScatterV(s, s, new long[] {1, 1}, 0, ORDERED));
                    assertTrue(e.getMessage().contains("itemBytes must be >= 1"), e.getMessage());
                    c.barrier();
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
    }
}
