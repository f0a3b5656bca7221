package dev.panamax.lightgbm;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;

import java.lang.foreign.MemorySegment;

/**
 * LightGBM's collectives over a Panamax {@link Communicator}, with what the communicator offers today: the
 * blocks of varying size are padded to the largest, moved with {@link Communicator#allGather}, and compacted
 * locally.
 *
 * <ul>
 * <li>All-gather: each rank's block padded to the largest block, one all-gather, then each block copied from its
 *     padded slot to its offset.</li>
 * <li>Reduce-scatter: an all-gather of every rank's whole input, then this rank reduces its own block over the
 *     ranks in rank order (rank 0's block, then rank 1's reduced into it, ...) with LightGBM's reducer. Correct
 *     and deterministic, the same order on every run, but not bandwidth-optimal: every rank receives
 *     {@code size - 1} whole inputs instead of {@code size - 1} blocks of its own. Variable-block
 *     reduce-scatter and all-gather collectives on the communicator will replace both.</li>
 * </ul>
 *
 * <p>The staging buffers come from {@link Communicator#allocate} (zero-copy between same-host ranks) and grow as
 * needed; {@link #close} frees them and leaves the communicator open. After a failure {@link #abandon} aborts the
 * communicator, so that the peers' collectives fail at once instead of at their timeouts. One instance serves one
 * rank, called from one thread.
 */
public final class CommunicatorNetwork implements LightGbmNetwork, AutoCloseable {
    private final Communicator communicator;
    private MemorySegment send;
    private MemorySegment recv;
    private volatile boolean abandoned;

    /** LightGBM's collectives over {@code communicator}, which the caller keeps owning. */
    public CommunicatorNetwork(Communicator communicator) {
        this.communicator = communicator;
    }

    @Override
    public int rank() {
        return communicator.rank();
    }

    @Override
    public int size() {
        return communicator.size();
    }

    @Override
    public void allGather(MemorySegment input, int[] blockStart, int[] blockLen, MemorySegment output) {
        int n = communicator.size();
        int me = communicator.rank();
        long slot = 0;
        for (int len : blockLen) {
            slot = Math.max(slot, len);
        }
        if (slot == 0) {
            return;
        }
        ensureCapacity(slot, slot * n);
        // The input may lie inside the output: it is staged before anything is written there.
        MemorySegment.copy(input, 0, send, 0, blockLen[me]);
        communicator.allGather(send, recv, slot, DataType.UINT8);
        for (int r = 0; r < n; r++) {
            MemorySegment.copy(recv, r * slot, output, blockStart[r], blockLen[r]);
        }
    }

    @Override
    public void reduceScatter(MemorySegment input, int typeSize, int[] blockStart, int[] blockLen,
            MemorySegment output, ItemReducer reducer) {
        int n = communicator.size();
        int me = communicator.rank();
        // Every rank's input has the same layout: the blocks, back to back.
        long whole = 0;
        for (int r = 0; r < n; r++) {
            whole = Math.max(whole, (long) blockStart[r] + blockLen[r]);
        }
        if (whole == 0) {
            return;
        }
        ensureCapacity(whole, whole * n);
        MemorySegment.copy(input, 0, send, 0, whole);
        communicator.allGather(send, recv, whole, DataType.UINT8);
        int len = blockLen[me];
        MemorySegment mine = output.asSlice(0, len);
        MemorySegment.copy(recv, blockStart[me], mine, 0, len);
        for (int r = 1; r < n; r++) {
            reducer.reduce(recv.asSlice(r * whole + blockStart[me], len), mine, typeSize, len);
        }
    }

    /** Aborts the communicator: the peers' collectives fail at once (see {@link Communicator#abort}). */
    @Override
    public void abandon(Throwable cause) {
        abandoned = true;
        communicator.abort();
    }

    /** Frees the staging buffers (after {@link #abandon}, the abort has); the communicator stays open. */
    @Override
    public void close() {
        MemorySegment s = send;
        MemorySegment r = recv;
        send = null;
        recv = null;
        if (abandoned) {
            return;
        }
        try {
            if (s != null) {
                communicator.free(s);
            }
        } finally {
            if (r != null) {
                communicator.free(r);
            }
        }
    }

    private void ensureCapacity(long sendBytes, long recvBytes) {
        if (send == null || send.byteSize() < sendBytes) {
            if (send != null) {
                communicator.free(send);
                send = null;
            }
            send = communicator.allocate(grown(sendBytes));
        }
        if (recv == null || recv.byteSize() < recvBytes) {
            if (recv != null) {
                communicator.free(recv);
                recv = null;
            }
            recv = communicator.allocate(grown(recvBytes));
        }
    }

    /** A capacity of at least {@code bytes}, rounded up to a power of two so that growth is rare. */
    private static long grown(long bytes) {
        return Long.highestOneBit(Math.max(4096, bytes - 1)) << 1;
    }
}
