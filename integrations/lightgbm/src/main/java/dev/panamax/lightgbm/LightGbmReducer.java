package dev.panamax.lightgbm;

import java.lang.foreign.MemorySegment;

/**
 * The element-wise reduction LightGBM hands to a reduce-scatter: {@code inout[i] = inout[i] op in[i]} over
 * {@code byteCount} bytes that hold items of {@code typeSize} bytes each. LightGBM's {@code ReduceFunction} calls
 * the count {@code array_size}, but it is a count of bytes, not of items (its {@code HistogramSumReducer} steps
 * {@code used_size += type_size} until it reaches it).
 */
@FunctionalInterface
public interface LightGbmReducer {
    /** Reduces the first {@code byteCount} bytes of {@code in} into those of {@code inout}. */
    void reduce(MemorySegment in, MemorySegment inout, int typeSize, int byteCount);
}
