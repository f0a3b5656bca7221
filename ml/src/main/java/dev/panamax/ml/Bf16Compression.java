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
    private static final ValueLayout.OfShort BF16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final int CHUNK = 4096;

    private final double[] doubles = new double[CHUNK];
    private final float[] floats = new float[CHUNK];
    private final short[] shorts = new short[CHUNK];

    /** The bfloat16 copy of the bucket that crosses the network. */
    private final WireBuffer wire = new WireBuffer();

    @Override
    public void requireSupported(DataType type) {
        FloatBuckets.requireFloat("bf16", type);
    }

    @Override
    public void allReduce(Communicator comm, MemorySegment bucket, long count, DataType type, ReduceOp op) {
        FloatBuckets.requireFloatSumOrAverage("bf16", type, op);
        if (count == 0) {
            return; // every rank has the same buckets, so every rank skips this one
        }
        MemorySegment w = wire.get(comm, 2 * count);
        boolean wide = type == DataType.FLOAT64;
        // Converted in chunks through heap arrays: loops over arrays compile to far tighter code than
        // element-wise segment accesses (the same reason the float16 reduction kernels stage).
        for (long i = 0; i < count; i += CHUNK) {
            int m = (int) Math.min(CHUNK, count - i);
            if (wide) {
                MemorySegment.copy(bucket, F64, 8 * i, doubles, 0, m);
                for (int k = 0; k < m; k++) {
                    // float64 rounds to float first: a double rounding, harmless at bfloat16's 8 bits
                    shorts[k] = Half.floatToBfloat16((float) doubles[k]);
                }
            } else {
                MemorySegment.copy(bucket, F32, 4 * i, floats, 0, m);
                for (int k = 0; k < m; k++) {
                    shorts[k] = Half.floatToBfloat16(floats[k]);
                }
            }
            MemorySegment.copy(shorts, 0, w, BF16, 2 * i, m);
        }
        comm.allReduce(w, count, DataType.BFLOAT16, ReduceOp.SUM);
        // Divided in the bucket's own type, as the plain AVG does.
        int ranks = op == ReduceOp.AVG ? comm.size() : 1;
        for (long i = 0; i < count; i += CHUNK) {
            int m = (int) Math.min(CHUNK, count - i);
            MemorySegment.copy(w, BF16, 2 * i, shorts, 0, m);
            if (wide) {
                for (int k = 0; k < m; k++) {
                    doubles[k] = (double) Half.bfloat16ToFloat(shorts[k]) / ranks;
                }
                MemorySegment.copy(doubles, 0, bucket, F64, 8 * i, m);
            } else {
                for (int k = 0; k < m; k++) {
                    floats[k] = Half.bfloat16ToFloat(shorts[k]) / ranks;
                }
                MemorySegment.copy(floats, 0, bucket, F32, 4 * i, m);
            }
        }
    }

    @Override
    public void close() {
        wire.close();
    }

    @Override
    public String toString() {
        return "bf16";
    }
}
