package dev.panamax.ml;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;
import dev.panamax.memory.Half;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** {@link GradientCompression#bf16()}: float32 or float64 buckets all-reduced as bfloat16. */
final class Bf16Compression implements GradientCompression {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT;

    /** The bfloat16 copy of the bucket that crosses the network, from {@link #owner}'s allocator; grown on demand. */
    private MemorySegment wire;
    private Communicator owner;

    @Override
    public void requireSupported(DataType type) {
        if (type != DataType.FLOAT32 && type != DataType.FLOAT64) {
            throw new IllegalArgumentException("bf16 compression carries float32 or float64 gradients, not "
                    + type.canonicalName());
        }
    }

    @Override
    public void allReduce(Communicator comm, MemorySegment bucket, long count, DataType type, ReduceOp op) {
        requireSupported(type);
        if (op != ReduceOp.SUM && op != ReduceOp.AVG) {
            throw new IllegalArgumentException("bf16 compression sums or averages, not " + op);
        }
        if (count == 0) {
            return; // every rank has the same buckets, so every rank skips this one
        }
        MemorySegment w = wire(comm, 2 * count);
        boolean wide = type == DataType.FLOAT64;
        for (long i = 0; i < count; i++) {
            // float64 rounds to float first: a double rounding, harmless at bfloat16's 8 bits
            float v = wide ? (float) bucket.getAtIndex(F64, i) : bucket.getAtIndex(F32, i);
            w.setAtIndex(BF16, i, Half.floatToBfloat16(v));
        }
        comm.allReduce(w, count, DataType.BFLOAT16, ReduceOp.SUM);
        // Divided in the bucket's own type, as the plain AVG does.
        int ranks = op == ReduceOp.AVG ? comm.size() : 1;
        for (long i = 0; i < count; i++) {
            float sum = Half.bfloat16ToFloat(w.getAtIndex(BF16, i));
            if (wide) {
                bucket.setAtIndex(F64, i, (double) sum / ranks);
            } else {
                bucket.setAtIndex(F32, i, sum / ranks);
            }
        }
    }

    private MemorySegment wire(Communicator comm, long byteSize) {
        if (wire == null || wire.byteSize() < byteSize || owner != comm) {
            close();
            wire = comm.allocate(Math.max(4096, byteSize));
            owner = comm;
        }
        return wire.asSlice(0, byteSize);
    }

    @Override
    public void close() {
        if (wire != null) {
            try {
                owner.free(wire);
            } catch (RuntimeException ignored) {
                // the communicator was closed first, which freed it
            }
            wire = null;
            owner = null;
        }
    }

    @Override
    public String toString() {
        return "bf16";
    }
}
