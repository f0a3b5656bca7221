package dev.panamax.lightgbm;

import java.lang.foreign.MemorySegment;

/**
 * The collectives LightGBM's distributed training needs, as it calls them through
 * {@code LGBM_NetworkInitWithFunctions} (LightGBM 3.3, {@code include/LightGBM/meta.h}: {@code
 * ReduceScatterFunction} and {@code AllgatherFunction}). One instance serves one rank; LightGBM calls it on the
 * thread that opened the rank's {@link NetworkSession}. All sizes and offsets are in bytes. Every rank passes the
 * same {@code blockStart} and {@code blockLen}: block r is rank r's.
 *
 * <p>A method may throw: the session records the failure, calls {@link #abandon}, and the Java caller of the
 * LightGBM function that was running gets it as a {@link LightGbmNetworkException}.
 */
public interface LightGbmNetwork {
    /** This rank, 0 &lt;= rank &lt; size. */
    int rank();

    /** The number of ranks. */
    int size();

    /**
     * Reduce-scatter with blocks of varying size: {@code input} is this rank's whole buffer, block r at
     * {@code [blockStart[r], blockStart[r] + blockLen[r])}; the reduction over all ranks of this rank's block is
     * written to the start of {@code output} ({@code [0, blockLen[rank])}, as LightGBM's own implementation
     * does). {@code reducer} is valid only during the call. {@code input} may be changed.
     */
    void reduceScatter(MemorySegment input, int typeSize, int[] blockStart, int[] blockLen, MemorySegment output,
            LightGbmReducer reducer);

    /**
     * All-gather with blocks of varying size: this rank's {@code input} ({@code blockLen[rank]} bytes) lands at
     * {@code blockStart[rank]} of every rank's {@code output}. {@code input} may lie inside {@code output}.
     */
    void allGather(MemorySegment input, int[] blockStart, int[] blockLen, MemorySegment output);

    /**
     * Called once after a method of this network failed on this rank, so that the other ranks do not wait for
     * it until their timeouts. The default does nothing.
     */
    default void abandon(Throwable cause) {
    }
}
