package dev.panamax.ml;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;

/**
 * How {@link GradientSynchronizer} all-reduces one bucket of gradients (a tensor, or consecutive small tensors
 * fused into one buffer): the hook runs the all-reduce itself, as PyTorch DDP's communication hooks do, so that it
 * can compress the bucket before and restore it after, or run several collectives where a method needs them.
 * {@link #none()} all-reduces the bucket as it is; {@link #bf16()} sends float32 (or float64) gradients as
 * bfloat16, half (a quarter) of the bytes on the wire; {@link #powerSgd(int)} sends a low-rank approximation.
 *
 * <p>The synchronizer calls the hook on its background thread only, one bucket at a time, the same buckets in the
 * same order on every rank, and closes it with itself ({@link #close()} frees what the hook holds).
 */
public interface GradientCompression extends AutoCloseable {
    /**
     * All-reduces the first {@code count} elements of {@code type} of {@code bucket} in place over {@code comm}:
     * their sum, or with {@code op} {@link ReduceOp#AVG} their average.
     */
    void allReduce(Communicator comm, MemorySegment bucket, long count, DataType type, ReduceOp op);

    /**
     * Refuses, with an {@link IllegalArgumentException} naming the type, gradients this hook cannot carry;
     * called when a gradient is registered. Accepts every type unless overridden.
     */
    default void requireSupported(DataType type) {
    }

    /** Frees what the hook holds; nothing unless overridden. */
    @Override
    default void close() {
    }

    /** The bucket all-reduced as it is. */
    static GradientCompression none() {
        return NoCompression.INSTANCE;
    }

    /**
     * float32 or float64 gradients sent as bfloat16 (as PyTorch's {@code bf16_compress_hook}): each rank rounds
     * its bucket to bfloat16 (to nearest even), the bfloat16 vectors are summed by the communicator's all-reduce
     * (each partial sum rounded to bfloat16), and the sum is widened back to the bucket's type and, for an
     * average, divided there. Half the bytes of a float32 all-reduce, a quarter of a float64 one; about 3
     * significant decimal digits, so for gradients whose updates tolerate that. One instance per synchronizer
     * (it keeps a wire buffer).
     */
    static GradientCompression bf16() {
        return new Bf16Compression();
    }

    /**
     * float32 or float64 gradients sent as {@code wire} (bfloat16 or float16) with every partial sum kept in the
     * gradients' own type: the communicator's {@link Communicator#allReduce(MemorySegment, MemorySegment, long,
     * DataType, DataType, ReduceOp) all-reduce with a wire type}. The bytes of {@link #bf16()}, with each element
     * rounded twice (its inputs, then the result) whatever the rank count, where {@code bf16()} rounds every
     * partial sum.
     */
    static GradientCompression onWire(DataType wire) {
        return new WireTypeCompression(wire);
    }

    /**
     * PowerSGD of rank {@code rank} with error feedback and warm start (as PyTorch's {@code
     * batched_powerSGD_hook}): each float32 or float64 bucket is seen as a square matrix and all-reduced as a
     * rank-{@code rank} approximation, two all-reduces of {@code 2 * rank * ceil(sqrt(count))} elements in all
     * instead of {@code count}; what the approximation leaves out of a rank's bucket is added to its next
     * gradient, so nothing is lost, only delayed. Buckets that would not shrink at least twofold are all-reduced
     * as they are. Every rank gets the same result. One instance per synchronizer: it keeps each bucket's state
     * (its error, P and Q; as much memory as the gradients, in float64) from step to step, known by the bucket's
     * address and count.
     */
    static GradientCompression powerSgd(int rank) {
        return new PowerSgdCompression(rank, 0);
    }

    /**
     * As {@link #powerSgd(int)}, with each bucket's first {@code uncompressedSteps} all-reduces plain (PyTorch's
     * {@code start_powerSGD_iter}: the early steps, where gradients change fast, uncompressed).
     */
    static GradientCompression powerSgd(int rank, int uncompressedSteps) {
        return new PowerSgdCompression(rank, uncompressedSteps);
    }
}
