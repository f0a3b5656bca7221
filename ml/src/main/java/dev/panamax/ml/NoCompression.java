package dev.panamax.ml;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;

/** {@link GradientCompression#none()}: the plain all-reduce. */
final class NoCompression implements GradientCompression {
    static final NoCompression INSTANCE = new NoCompression();

    private NoCompression() {
    }

    @Override
    public void allReduce(Communicator comm, MemorySegment bucket, long count, DataType type, ReduceOp op) {
        comm.allReduce(bucket, count, type, op);
    }

    @Override
    public String toString() {
        return "none";
    }
}
