package dev.panamax.collectives;

import java.lang.foreign.MemorySegment;

/**
 * A user-defined reduction over opaque items of a fixed byte size (a histogram entry, a struct),
 * for {@link Communicator#reduceScatterV(MemorySegment, MemorySegment, long[], int, ItemReducer)} and
 * {@link Communicator#allReduce(MemorySegment, long, int, ItemReducer)} and
 * {@link Communicator#reduce(MemorySegment, MemorySegment, long, int, ItemReducer, int)}.
 * It must be associative over the items it is given; the collectives apply it in a fixed order,
 * so the result is the same run to run. Either Java code over the segments, or a C function through
 * {@link #ofNative}.
 */
@FunctionalInterface
public interface ItemReducer {
    /**
     * Folds {@code in} into {@code inout}: {@code itemCount} items, item i of each at byte
     * {@code i * itemBytes}; afterwards item i of {@code inout} is {@code inout[i] (+) in[i]}.
     */
    void reduce(MemorySegment in, MemorySegment inout, long itemCount);

    /**
     * A C function as the reduction: {@code void f(const void* in, void* inout, int32_t itemBytes,
     * int64_t itemCount)}, called through a downcall with the same meaning as {@link #reduce}
     * ({@code itemBytes} passed as given here). It runs on the calling thread, on native memory only,
     * and must not keep the pointers. The function must stay loaded while the reducer is used.
     *
     * @param function the function's address, for example from {@link java.lang.foreign.SymbolLookup}
     * @throws IllegalArgumentException when {@code function} is NULL or {@code itemBytes < 1}
     */
    static ItemReducer ofNative(MemorySegment function, int itemBytes) {
        return new NativeItemReducer(function, itemBytes);
    }
}
