package dev.panamax.memory;

import java.util.Locale;

/**
 * Element-wise reduction operators. {@link #AVG} reduces as {@link #SUM} and divides by the rank
 * count once, at the end ({@link Reductions#divide}).
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
