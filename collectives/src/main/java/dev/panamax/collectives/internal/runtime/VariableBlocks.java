package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.ItemReducer;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * The collectives whose blocks differ in length from rank to rank (MPI's v-variants), on top of the
 * fixed-block ones: each block is copied into a slot of the longest block's length, the fixed-block
 * collective runs on the slots, and the results are copied out. Equal blocks skip the copies.
 * Correct on every transport and algorithm the fixed-block call has, with its reduction order;
 * the cost is the padding (the wire carries {@code size * longest} instead of the sum of the
 * blocks) and one copy in and out, small when the blocks are nearly equal, as a partitioned vector's
 * are. The slots are work buffers kept between calls (from the communicator's allocator, so shared
 * memory a same-host peer reads in place): a trainer calls these thousands of times, and allocating
 * shared memory per call cost far more than the collective. One call at a time: the owner serializes.
 */
final class VariableBlocks {
    private static final int SEND_SLOTS = 0;
    private static final int RECV_SLOTS = 1;
    /** A non-root rank's folded block in an item reduce. */
    private static final int OWN_BLOCK = 2;

    private final Communicator c;
    private final ScratchBuffers scratch;

    VariableBlocks(Communicator c, ScratchBuffers scratch) {
        this.c = c;
        this.scratch = scratch;
    }

    void reduceScatter(MemorySegment send, MemorySegment recv, long[] counts, DataType type, ReduceOp op) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(op, "op");
        Layout l = Layout.of(c, "reduceScatterV", counts, type.byteSize());
        l.checkBuffers(send, recv, l.total, counts[c.rank()]);
        if (l.equal) {
            c.reduceScatter(send, recv, l.longest, type, op);
            return;
        }
        MemorySegment slots = scratch.get(SEND_SLOTS, l.slotBytes * c.size());
        MemorySegment mine = scratch.get(RECV_SLOTS, l.slotBytes);
        l.scatterIntoSlots(send, slots);
        c.reduceScatter(slots, mine, l.longest, type, op);
        MemorySegment.copy(mine, 0, recv, 0, l.bytes(c.rank()));
    }

    void allGather(MemorySegment send, MemorySegment recv, long[] counts, DataType type) {
        Objects.requireNonNull(type, "type");
        Layout l = Layout.of(c, "allGatherV", counts, type.byteSize());
        l.checkBuffers(send, recv, counts[c.rank()], l.total);
        if (l.equal) {
            c.allGather(send, recv, l.longest, type);
            return;
        }
        MemorySegment mine = scratch.get(SEND_SLOTS, l.slotBytes);
        MemorySegment slots = scratch.get(RECV_SLOTS, l.slotBytes * c.size());
        MemorySegment.copy(send, 0, mine, 0, l.bytes(c.rank()));
        c.allGather(mine, slots, l.longest, type);
        l.gatherFromSlots(slots, recv);
    }

    void reduceScatter(MemorySegment send, MemorySegment recv, long[] itemCounts, int itemBytes,
            ItemReducer reducer) {
        Objects.requireNonNull(reducer, "reducer");
        if (itemBytes < 1) {
            throw new IllegalArgumentException("reduceScatterV: itemBytes must be >= 1: " + itemBytes);
        }
        Layout l = Layout.of(c, "reduceScatterV", itemCounts, itemBytes);
        long own = itemCounts[c.rank()];
        l.checkBuffers(send, recv, l.total, own);
        if (l.longest == 0) {
            c.barrier(); // nothing to reduce; still a collective every rank takes part in
            return;
        }
        // Every rank sends block q to rank q (an all-to-all of byte slots), then folds what it got
        // in rank order: ((block of rank 0 (+) rank 1) (+) rank 2) ..., the same on every run.
        MemorySegment out = scratch.get(SEND_SLOTS, l.slotBytes * c.size());
        MemorySegment in = scratch.get(RECV_SLOTS, l.slotBytes * c.size());
        l.scatterIntoSlots(send, out);
        c.allToAll(out, in, l.slotBytes, DataType.UINT8);
        long ownBytes = l.bytes(c.rank());
        MemorySegment acc = in.asSlice(0, ownBytes);
        for (int q = 1; q < c.size(); q++) {
            reducer.reduce(in.asSlice(q * l.slotBytes, ownBytes), acc, own);
        }
        MemorySegment.copy(acc, 0, recv, 0, ownBytes);
    }

    /**
     * In-place all-reduce of opaque items: the items cut into near-equal blocks, one per rank, reduced
     * by {@link #reduceScatter(MemorySegment, MemorySegment, long[], int, ItemReducer)} (rank order,
     * the same bits on every rank) and all-gathered back as bytes.
     */
    void allReduce(MemorySegment buffer, long itemCount, int itemBytes, ItemReducer reducer) {
        ItemBlocks blocks = ItemBlocks.of(c, "allReduce(ItemReducer)", itemCount, itemBytes, reducer);
        blocks.checkBuffer("the buffer", buffer);
        MemorySegment own = blocks.own(buffer);
        reduceScatter(buffer, own, blocks.items(), itemBytes, reducer);
        allGather(own, buffer, blocks.bytes(), DataType.UINT8);
    }

    /**
     * Reduce of opaque items to {@code root}: the same item reduce-scatter, then every rank sends its
     * folded block to the root, which receives them in place; {@code recv} is used only at the root.
     */
    void reduce(MemorySegment send, MemorySegment recv, long itemCount, int itemBytes, ItemReducer reducer,
            int root) {
        ItemBlocks blocks = ItemBlocks.of(c, "reduce(ItemReducer)", itemCount, itemBytes, reducer);
        if (root < 0 || root >= c.size()) {
            throw new IllegalArgumentException("reduce(ItemReducer): root " + root + " is not a rank of "
                    + c.size());
        }
        blocks.checkBuffer("send", send);
        int me = c.rank();
        if (me == root) {
            blocks.checkBuffer("recv", recv);
        }
        MemorySegment own = me == root ? blocks.own(recv) : scratch.get(OWN_BLOCK, blocks.bytes()[me]);
        reduceScatter(send, own, blocks.items(), itemBytes, reducer);
        if (me != root) {
            if (blocks.bytes()[me] > 0) {
                c.send(own, blocks.bytes()[me], DataType.UINT8, root);
            }
            return;
        }
        for (int q = 0; q < c.size(); q++) {
            if (q != root && blocks.bytes()[q] > 0) {
                c.recv(recv.asSlice(blocks.offsets()[q], blocks.bytes()[q]), blocks.bytes()[q], DataType.UINT8, q);
            }
        }
    }

    /** Items cut into near-equal blocks, one per rank in rank order: their counts, byte lengths and byte offsets. */
    private record ItemBlocks(String call, long itemCount, int itemBytes, long totalBytes, long[] items, long[] bytes,
            long[] offsets, int rank) {
        static ItemBlocks of(Communicator c, String call, long itemCount, int itemBytes, ItemReducer reducer) {
            Objects.requireNonNull(reducer, "reducer");
            if (itemCount < 0 || itemBytes < 1) {
                throw new IllegalArgumentException(call + ": itemCount must be >= 0 and itemBytes >= 1: " + itemCount
                        + ", " + itemBytes);
            }
            int n = c.size();
            long[] items = new long[n];
            long[] bytes = new long[n];
            long[] offsets = new long[n];
            long at = 0;
            for (int r = 0; r < n; r++) {
                items[r] = itemCount / n + (r < itemCount % n ? 1 : 0);
                bytes[r] = items[r] * itemBytes;
                offsets[r] = at;
                at += bytes[r];
            }
            return new ItemBlocks(call, itemCount, itemBytes, Math.multiplyExact(itemCount, (long) itemBytes), items,
                    bytes, offsets, c.rank());
        }

        void checkBuffer(String name, MemorySegment buffer) {
            if (buffer.byteSize() < totalBytes) {
                throw new IllegalArgumentException(call + ": " + name + " has " + buffer.byteSize() + " bytes, "
                        + itemCount + " items of " + itemBytes + " need " + totalBytes);
            }
        }

        /** This rank's block of a buffer holding all the items. */
        MemorySegment own(MemorySegment buffer) {
            return buffer.asSlice(offsets[rank], bytes[rank]);
        }
    }

    /** Where each rank's block lies: packed one after the other, and in slots of the longest block's length. */
    private record Layout(String call, long[] counts, long[] offsets, long total, long longest, boolean equal,
            long unitBytes, long slotBytes) {
        static Layout of(Communicator c, String call, long[] counts, long unitBytes) {
            Objects.requireNonNull(counts, call + ": counts");
            if (counts.length != c.size()) {
                throw new IllegalArgumentException(call + ": " + counts.length + " counts for " + c.size()
                        + " ranks (one block length per rank)");
            }
            long[] offsets = new long[counts.length];
            long total = 0;
            long longest = 0;
            boolean equal = true;
            for (int r = 0; r < counts.length; r++) {
                if (counts[r] < 0) {
                    throw new IllegalArgumentException(call + ": the block of rank " + r + " has a negative length: "
                            + counts[r]);
                }
                offsets[r] = total;
                total = Math.addExact(total, counts[r]);
                longest = Math.max(longest, counts[r]);
                equal &= counts[r] == counts[0];
            }
            return new Layout(call, counts.clone(), offsets, total, longest, equal, unitBytes,
                    Math.multiplyExact(longest, unitBytes));
        }

        long bytes(int rank) {
            return counts[rank] * unitBytes;
        }

        void checkBuffers(MemorySegment send, MemorySegment recv, long sendUnits, long recvUnits) {
            Objects.requireNonNull(send, call + ": send");
            Objects.requireNonNull(recv, call + ": recv");
            if (send.byteSize() < sendUnits * unitBytes) {
                throw new IllegalArgumentException(call + ": send holds " + send.byteSize() + " bytes, its blocks need "
                        + sendUnits * unitBytes);
            }
            if (recv.byteSize() < recvUnits * unitBytes) {
                throw new IllegalArgumentException(call + ": recv holds " + recv.byteSize() + " bytes, its blocks need "
                        + recvUnits * unitBytes);
            }
        }

        /** Block r of the packed {@code from} into slot r of {@code slots}. */
        void scatterIntoSlots(MemorySegment from, MemorySegment slots) {
            for (int r = 0; r < counts.length; r++) {
                MemorySegment.copy(from, offsets[r] * unitBytes, slots, r * slotBytes, bytes(r));
            }
        }

        /** Slot r of {@code slots} into block r of the packed {@code to}. */
        void gatherFromSlots(MemorySegment slots, MemorySegment to) {
            for (int r = 0; r < counts.length; r++) {
                MemorySegment.copy(slots, r * slotBytes, to, offsets[r] * unitBytes, bytes(r));
            }
        }
    }
}
