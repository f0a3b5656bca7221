package dev.panamax.ml;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

/** The argument checks the compression hooks for floating-point gradients share. */
final class FloatBuckets {
    private FloatBuckets() {
    }

    /** Refuses gradients other than float32 and float64, naming {@code hook} and the type. */
    static void requireFloat(String hook, DataType type) {
        if (type != DataType.FLOAT32 && type != DataType.FLOAT64) {
            throw new IllegalArgumentException(hook + " compression carries float32 or float64 gradients, not "
                    + type.canonicalName());
        }
    }

    /** Refuses a bucket of another type, or reduced otherwise than by a sum or an average. */
    static void requireFloatSumOrAverage(String hook, DataType type, ReduceOp op) {
        requireFloat(hook, type);
        if (op != ReduceOp.SUM && op != ReduceOp.AVG) {
            throw new IllegalArgumentException(hook + " compression sums or averages, not " + op);
        }
    }
}
