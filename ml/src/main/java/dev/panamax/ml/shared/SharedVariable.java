package dev.panamax.ml.shared;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Objects;

/**
 * A task-based all-reduce: a vector to which several tasks of each process contribute, reduced
 * element-wise over all tasks of all processes (the shared variable of the butterfly all-reduce
 * for task-based frameworks: {@code Init(key, numTasks, func)}, {@code Commit(vector)},
 * {@code Get}).
 *
 * <p>Each process {@linkplain #init initializes} the variable {@code key} on its communicator with
 * the number of its own tasks that will commit and an element-wise {@link SharedReduction}. Each task
 * then {@linkplain #commit(double[]) commits} one vector per round, which does not block: the
 * vectors are reduced into one as they arrive, in chunks over the cores. When the last of the
 * process's tasks has committed, one all-reduce across the processes runs on the communicator,
 * and every task's {@link Round#get} returns the global result. A variable runs any number of
 * rounds, one after the other: a round begins with the first commit after the previous round
 * ended (iterative training commits and gets once per iteration).
 *
 * <pre>{@code
 * SharedVariable grad = SharedVariable.init(comm, "grad", tasksHere,
 *         SharedReduction.of(DataType.FLOAT64, ReduceOp.SUM));
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
 * <p>Rounds are reduced in the order the commits arrive, so a {@link SharedReduction} should be
 * associative and commutative (as sums are up to rounding); all processes receive the same
 * result bits.
 */
public final class SharedVariable implements AutoCloseable {

    /**
     * One round of a variable: the commits of its tasks and, once every process's tasks have
     * committed, the global result.
     */
    public static final class Round {
        private final RoundState round;

        private Round(RoundState round) {
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
            return get(timeout).toArray(ValueLayout.JAVA_DOUBLE_UNALIGNED);
        }

        /** {@link #get} copied into a new array; the variable's type must be float32. */
        public float[] getFloats(Duration timeout) {
            requireType(DataType.FLOAT32, "getFloats");
            return get(timeout).toArray(ValueLayout.JAVA_FLOAT_UNALIGNED);
        }

        private void requireType(DataType type, String method) {
            if (round.slot().reduction().type() != type) {
                throw new IllegalStateException(method + " needs a " + type.canonicalName()
                        + " variable; shared variable '"
                        + round.slot().key() + "' holds " + round.slot().reduction().type().canonicalName());
            }
        }

        @Override
        public String toString() {
            return round.toString();
        }
    }

    private final Slot slot;

    private SharedVariable(Slot slot) {
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
    public static SharedVariable init(Communicator communicator, String key, int numTasks,
                                      SharedReduction reduction) {
        Objects.requireNonNull(communicator, "communicator");
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(reduction, "reduction");
        if (numTasks < 1) {
            throw new IllegalArgumentException("numTasks must be >= 1: " + numTasks);
        }
        return new SharedVariable(Coordinator.init(communicator, key, numTasks, reduction));
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
        return new SharedVariable(Coordinator.lookup(communicator, key));
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
    public SharedReduction reduction() {
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
            throw new IllegalArgumentException("a " + what + " of " + length
                    + " elements committed to shared variable '"
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
