package dev.panamax.memory;

import java.util.Locale;

/**
 * Element-wise reduction operators. {@link #AVG} of float32, float64 and float16 is, in the
 * communicators' collectives, a pre-multiplied sum: each rank's input multiplied by 1/size as it
 * enters the sum (as NCCL averages floats; no pass is added, and a float16 average does not overflow
 * where the sum would). Of bfloat16 and the integer types it reduces as {@link #SUM} and divides by
 * the rank count once, at the end ({@link Reductions#divide}; integers truncate).
 */
public enum ReduceOp {
    SUM, PROD, MIN, MAX, AVG;

    /** The operator applied pairwise while reducing (AVG accumulates as SUM). */
    public ReduceOp accumulating() {
        return this == AVG ? SUM : this;
    }

    /** Parses {@code sum}, {@code prod}, {@code min}, {@code max}, {@code avg} (any case). */
    public static ReduceOp parse(String name) {
        try {
            return valueOf(name.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown reduce op '" + name + "'; known: sum, prod, min, max, avg");
        }
    }
}
