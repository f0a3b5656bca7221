package dev.panamax.collectives;

import java.lang.foreign.MemorySegment;

/**
 * A user-defined reduction over opaque items of a fixed byte size (a histogram entry, a struct),
 * for {@link Communicator#reduceScatterV(MemorySegment, MemorySegment, long[], int, ItemReducer)}.
 * It must be associative over the items it is given; the collectives apply it in a fixed order,
 * so the result is the same run to run.
 */
@FunctionalInterface
public interface ItemReducer {
    /**
     * Folds {@code in} into {@code inout}: {@code itemCount} items, item i of each at byte
     * {@code i * itemBytes}; afterwards item i of {@code inout} is {@code inout[i] (+) in[i]}.
     */
    void reduce(MemorySegment in, MemorySegment inout, long itemCount);
}
