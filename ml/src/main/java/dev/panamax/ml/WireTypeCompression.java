package dev.panamax.ml;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.util.Locale;

/**
 * {@link GradientCompression#onWire}: the bucket all-reduced by the communicator's all-reduce with a 16-bit wire
 * type and partial sums in the bucket's own type.
 */
final class WireTypeCompression implements GradientCompression {
    private final DataType wire;

    WireTypeCompression(DataType wire) {
        if (wire != DataType.BFLOAT16 && wire != DataType.FLOAT16) {
            throw new IllegalArgumentException("the wire type is bfloat16 or float16, not " + wire.canonicalName());
        }
        this.wire = wire;
    }

    @Override
    public void requireSupported(DataType type) {
        FloatBuckets.requireFloat(toString(), type);
    }

    @Override
    public void allReduce(Communicator comm, MemorySegment bucket, long count, DataType type, ReduceOp op) {
        FloatBuckets.requireFloatSumOrAverage(toString(), type, op);
        comm.allReduce(bucket, bucket, count, type, wire, op);
    }

    @Override
    public String toString() {
        return wire.canonicalName().toLowerCase(Locale.ROOT) + "-wire";
    }
}
