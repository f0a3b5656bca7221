package dev.panamax.ml.shared;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.util.Objects;
import java.util.function.DoubleBinaryOperator;

/**
 * The element-wise reduction of a {@link SharedVariable}, which also fixes the element type of the vectors: a
 * built-in operator ({@link #of}) or a function of two elements ({@link #ofDoubles}, {@link #ofFloats}).
 */
public sealed interface SharedReduction {
    /** The element type of the vectors. */
    DataType type();

    /**
     * A built-in operator over elements of {@code type}, reduced with the vectorized kernels and
     * the communicator's all-reduce. {@link ReduceOp#AVG} divides the sum by the number of
     * tasks of all processes.
     */
    static SharedReduction of(DataType type, ReduceOp op) {
        return new Operator(type, op);
    }

    /** {@code c[i] = fn(a[i], b[i])} over float64 vectors. */
    static SharedReduction ofDoubles(DoubleBinaryOperator fn) {
        return new DoubleFunction(fn);
    }

    /** {@code c[i] = fn(a[i], b[i])} over float32 vectors. */
    static SharedReduction ofFloats(FloatBinaryOperator fn) {
        return new FloatFunction(fn);
    }

    /** A function of two floats (the JDK has none). */
    @FunctionalInterface
    interface FloatBinaryOperator {
        float applyAsFloat(float a, float b);
    }

    /** A built-in operator. */
    record Operator(DataType type, ReduceOp op) implements SharedReduction {
        public Operator {
            Objects.requireNonNull(type, "type");
            Objects.requireNonNull(op, "op");
        }
    }

    /** A function of two float64 elements. */
    record DoubleFunction(DoubleBinaryOperator fn) implements SharedReduction {
        public DoubleFunction {
            Objects.requireNonNull(fn, "fn");
        }

        @Override
        public DataType type() {
            return DataType.FLOAT64;
        }
    }

    /** A function of two float32 elements. */
    record FloatFunction(FloatBinaryOperator fn) implements SharedReduction {
        public FloatFunction {
            Objects.requireNonNull(fn, "fn");
        }

        @Override
        public DataType type() {
            return DataType.FLOAT32;
        }
    }
}
