package dev.panamax.ml;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.ml.internal.SharedCoordinator;
import dev.panamax.ml.internal.SharedRound;
import dev.panamax.ml.internal.SharedSlot;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Objects;
import java.util.function.DoubleBinaryOperator;

/**
 * A task-based all-reduce: a vector to which several tasks of each process contribute, reduced
 * element-wise over all tasks of all processes (the shared variable of the butterfly all-reduce
 * for task-based frameworks: {@code Init(key, numTasks, func)}, {@code Commit(vector)},
 * {@code Get}).
 *
 * <p>Each process {@linkplain #init initializes} the variable {@code key} on its communicator with
 * the number of its own tasks that will commit and an element-wise {@link Reduction}. Each task
 * then {@linkplain #commit(double[]) commits} one vector per round, which does not block: the
 * vectors are reduced into one as they arrive, in chunks over the cores. When the last of the
 * process's tasks has committed, one all-reduce across the processes runs on the communicator,
 * and every task's {@link Round#get} returns the global result. A variable runs any number of
 * rounds, one after the other: a round begins with the first commit after the previous round
 * ended (iterative training commits and gets once per iteration).
 *
 * <pre>{@code
 * SharedVariable grad = SharedVariable.init(comm, "grad", tasksHere, Reduction.of(DataType.FLOAT64, ReduceOp.SUM));
 * // in each task:
 * double[] sum = grad.commit(localGradient).getDoubles(Duration.ofMinutes(1));
 * }</pre>
 *
 * <p>Every process must run the same rounds of the same variables with vectors of the same
 * length; the processes agree before each all-reduce on which round it is for, so variables may
 * finish their rounds in different orders on different processes. The communicator carries the
 * variables' all-reduces on a thread of its own: do not run other collectives on it while a
 * round is in flight. A committed vector must stay untouched until its round has ended.
 *
 * <p>Rounds are reduced in the order the commits arrive, so a {@link Reduction} should be
 * associative and commutative (as sums are up to rounding); all processes receive the same
 * result bits.
 */
public final class SharedVariable implements AutoCloseable {

    /** An element-wise reduction, which also fixes the element type of the vectors. */
    public sealed interface Reduction {
        /** The element type of the vectors. */
        DataType type();

        /**
         * A built-in operator over elements of {@code type}, reduced with the vectorized kernels and
         * the communicator's all-reduce. {@link ReduceOp#AVG} divides the sum by the number of
         * tasks of all processes.
         */
        static Reduction of(DataType type, ReduceOp op) {
            return new Operator(type, op);
        }

        /** {@code c[i] = fn(a[i], b[i])} over float64 vectors. */
        static Reduction ofDoubles(DoubleBinaryOperator fn) {
            return new DoubleFunction(fn);
        }

        /** {@code c[i] = fn(a[i], b[i])} over float32 vectors. */
        static Reduction ofFloats(FloatBinaryOperator fn) {
            return new FloatFunction(fn);
        }

        /** A built-in operator. */
        record Operator(DataType type, ReduceOp op) implements Reduction {
            public Operator {
                Objects.requireNonNull(type, "type");
                Objects.requireNonNull(op, "op");
            }
        }

        /** A function of two float64 elements. */
        record DoubleFunction(DoubleBinaryOperator fn) implements Reduction {
            public DoubleFunction {
                Objects.requireNonNull(fn, "fn");
            }

            @Override
            public DataType type() {
                return DataType.FLOAT64;
            }
        }

        /** A function of two float32 elements. */
        record FloatFunction(FloatBinaryOperator fn) implements Reduction {
            public FloatFunction {
                Objects.requireNonNull(fn, "fn");
            }

            @Override
            public DataType type() {
                return DataType.FLOAT32;
            }
        }
    }

    /** A function of two floats (the JDK has none). */
    @FunctionalInterface
    public interface FloatBinaryOperator {
        float applyAsFloat(float a, float b);
    }

    /**
     * One round of a variable: the commits of its tasks and, once every process's tasks have
     * committed, the global result.
     */
    public static final class Round {
        private final SharedRound round;

        private Round(SharedRound round) {
            this.round = round;
        }

        /** The round's number, counted from 0 for each variable. */
        public long number() {
            return round.number();
        }

        /** True once the result is there or the round has failed. */
        public boolean isDone() {
            return round.isFinished();
        }

        /**
         * Waits for the global result and returns it as a read-only segment of
         * {@code length * type().byteSize()} bytes, which stays valid while it is reachable.
         *
         * @throws dev.panamax.collectives.CollectiveTimeoutException when the timeout passes first,
         *         naming how many of the process's tasks had committed
         * @throws dev.panamax.collectives.CollectiveException when the round failed (its cause says why)
         */
        public MemorySegment get(Duration timeout) {
            return round.await(timeoutNanos(timeout));
        }

        /** {@link #get} copied into a new array; the variable's type must be float64. */
        public double[] getDoubles(Duration timeout) {
            requireType(DataType.FLOAT64, "getDoubles");
            return get(timeout).toArray(java.lang.foreign.ValueLayout.JAVA_DOUBLE_UNALIGNED);
        }

        /** {@link #get} copied into a new array; the variable's type must be float32. */
        public float[] getFloats(Duration timeout) {
            requireType(DataType.FLOAT32, "getFloats");
            return get(timeout).toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED);
        }

        private void requireType(DataType type, String method) {
            if (round.slot().reduction().type() != type) {
                throw new IllegalStateException(method + " needs a " + type.canonicalName() + " variable; shared variable '"
                        + round.slot().key() + "' holds " + round.slot().reduction().type().canonicalName());
            }
        }

        @Override
        public String toString() {
            return round.toString();
        }
    }

    private final SharedSlot slot;

    private SharedVariable(SharedSlot slot) {
        this.slot = slot;
    }

    /**
     * The shared variable {@code key} of this process on {@code communicator}: created by the first
     * call, joined by later ones (so every task of a process may call it). Later calls must pass the
     * same {@code numTasks} and a reduction of the same kind.
     *
     * @param numTasks how many tasks of this process commit in each round (at least 1)
     * @throws IllegalArgumentException when the variable exists with another task count or reduction
     */
    public static SharedVariable init(Communicator communicator, String key, int numTasks, Reduction reduction) {
        Objects.requireNonNull(communicator, "communicator");
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(reduction, "reduction");
        if (numTasks < 1) {
            throw new IllegalArgumentException("numTasks must be >= 1: " + numTasks);
        }
        return new SharedVariable(SharedCoordinator.init(communicator, key, numTasks, reduction));
    }

    /**
     * The shared variable {@code key} that this process initialized on {@code communicator}, for
     * tasks that only read it.
     *
     * @throws java.util.NoSuchElementException when there is none, naming the known keys
     */
    public static SharedVariable lookup(Communicator communicator, String key) {
        Objects.requireNonNull(communicator, "communicator");
        Objects.requireNonNull(key, "key");
        return new SharedVariable(SharedCoordinator.lookup(communicator, key));
    }

    /** The key. */
    public String key() {
        return slot.key();
    }

    /** How many tasks of this process commit per round. */
    public int numTasks() {
        return slot.numTasks();
    }

    /** The reduction, with the element type. */
    public Reduction reduction() {
        return slot.reduction();
    }

    /**
     * Commits a task's vector to the current round and returns the round; never blocks. The
     * array must stay untouched until the round has ended.
     *
     * @throws IllegalStateException when the round already has {@code numTasks} commits, or the
     *         variable is closed
     * @throws IllegalArgumentException when the length differs from the round's first commit, or
     *         the variable is not float64
     */
    public Round commit(double[] vector) {
        requireType(DataType.FLOAT64, vector.length, "double[]");
        return new Round(slot.commit(MemorySegment.ofArray(vector)));
    }

    /** As {@link #commit(double[])} for a float32 variable. */
    public Round commit(float[] vector) {
        requireType(DataType.FLOAT32, vector.length, "float[]");
        return new Round(slot.commit(MemorySegment.ofArray(vector)));
    }

    /**
     * As {@link #commit(double[])} for a vector of any element type in a segment (heap or
     * native) whose byte size is a multiple of the element size.
     */
    public Round commit(MemorySegment vector) {
        int size = slot.reduction().type().byteSize();
        if (vector.byteSize() % size != 0) {
            throw new IllegalArgumentException("a vector of " + vector.byteSize() + " bytes is not a whole number of "
                    + slot.reduction().type().canonicalName() + " elements");
        }
        return new Round(slot.commit(vector));
    }

    /**
     * The latest round: the one that is collecting commits or reducing, else the last one ended.
     * For tasks that did not commit (a later stage reading the result); a task that committed
     * waits on the {@link Round} that {@code commit} returned, since another task may already
     * have begun the next round.
     *
     * @throws IllegalStateException when no round has begun
     */
    public Round latest() {
        return new Round(slot.latest());
    }

    /** {@code latest().get(timeout)}. */
    public MemorySegment get(Duration timeout) {
        return latest().get(timeout);
    }

    /** {@code latest().getDoubles(timeout)}. */
    public double[] getDoubles(Duration timeout) {
        return latest().getDoubles(timeout);
    }

    /** {@code latest().getFloats(timeout)}. */
    public float[] getFloats(Duration timeout) {
        return latest().getFloats(timeout);
    }

    /**
     * Forgets the variable in this process: a round still collecting commits fails, and the key
     * can be initialized anew. Idempotent.
     */
    @Override
    public void close() {
        slot.close();
    }

    @Override
    public String toString() {
        return slot.toString();
    }

    private void requireType(DataType type, int length, String what) {
        if (slot.reduction().type() != type) {
            throw new IllegalArgumentException("a " + what + " of " + length + " elements committed to shared variable '"
                    + slot.key() + "', which holds " + slot.reduction().type().canonicalName());
        }
    }

    private static long timeoutNanos(Duration timeout) {
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must not be negative: " + timeout);
        }
        try {
            return timeout.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }
}
