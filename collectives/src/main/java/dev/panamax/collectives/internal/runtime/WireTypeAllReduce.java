package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.Conversions;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.Reductions;

import java.lang.foreign.MemorySegment;

/**
 * {@link Communicator#allReduce(MemorySegment, MemorySegment, long, DataType, DataType, ReduceOp)}: a float32 or
 * float64 all-reduce whose data crosses the network as bfloat16 or float16 while every partial result stays in the
 * data's own type. A direct reduce-scatter and an all-gather, both of wire-type blocks:
 * <ol>
 * <li>each rank rounds its vector to the wire type, split in {@code size} blocks of {@code ceil(count / size)};</li>
 * <li>an all-to-all gives rank r block r of every rank;</li>
 * <li>rank r folds them in rank order in the wide type (and divides for an average), then rounds its block to
 * the wire type once;</li>
 * <li>an all-gather of those blocks, widened into {@code recv}.</li>
 * </ol>
 * Each element is rounded to the wire type twice (each input, then the result), however many ranks there are,
 * against once per hop for a ring all-reduce in the wire type; the bytes on the wire are a ring's in the wire type
 * (half or a quarter of the wide type's). The fold order is fixed, so the result is the same on every rank and in
 * every run.
 */
final class WireTypeAllReduce {
    private final Communicator comm;
    /** The wire-type blocks sent, those received, and the wide accumulator: from the communicator's allocator. */
    private final ScratchBuffers scratch;

    WireTypeAllReduce(Communicator comm, ScratchBuffers scratch) {
        this.comm = comm;
        this.scratch = scratch;
    }

    /** Runs one all-reduce; one at a time (the scratch buffers are shared). */
    synchronized void run(MemorySegment send, MemorySegment recv, long count, DataType type, DataType wire,
            ReduceOp op) {
        if (count == 0) {
            return;
        }
        int n = comm.size();
        long block = (count + n - 1) / n;
        long w = wire.byteSize();
        MemorySegment out = scratch.get(0, n * block * w);
        MemorySegment in = scratch.get(1, n * block * w);
        MemorySegment acc = scratch.get(2, block * type.byteSize());
        Conversions.narrow(type, send, 0, wire, out, 0, count);
        // The last block's padding folds whatever the buffer held; it is dropped at the end.
        comm.allToAll(out, in, block, wire);
        Conversions.widen(wire, in, 0, type, acc, 0, block);
        for (int q = 1; q < n; q++) {
            Conversions.accumulate(wire, in, q * block, type, acc, 0, block, op);
        }
        if (op == ReduceOp.AVG) {
            Reductions.divide(type, acc, 0, block, n);
        }
        MemorySegment mine = out.asSlice(0, block * w);
        Conversions.narrow(type, acc, 0, wire, mine, 0, block);
        comm.allGather(mine, in, block, wire);
        Conversions.widen(wire, in, 0, type, recv, 0, count);
    }
}
