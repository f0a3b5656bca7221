package dev.panamax.lightgbm;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;

import java.lang.foreign.MemorySegment;

/**
 * LightGBM's collectives over a Panamax {@link Communicator}: its all-gather is
 * {@link Communicator#allGatherV} of byte blocks, its reduce-scatter
 * {@link Communicator#reduceScatterV(MemorySegment, MemorySegment, long[], int, dev.panamax.collectives.ItemReducer)}
 * of {@code type_size}-byte items with LightGBM's reducer (which merges histogram entries), applied in
 * rank order, so that every run gives the same bits.
 *
 * <p>LightGBM lays the blocks out back to back from offset 0; when a layout is not packed, or the
 * all-gather's input lies inside its output elsewhere than at its own block, the data is staged in
 * buffers from {@link Communicator#allocate} (zero-copy between same-host ranks), which grow as needed;
 * {@link #close} frees them and leaves the communicator open. After a failure {@link #abandon} aborts the
 * communicator (or revokes it, see {@link #revokingOnFailure}), so that the peers' collectives fail at once
 * instead of at their timeouts. One instance serves one rank, called from one thread.
 */
public final class CommunicatorNetwork implements LightGbmNetwork, AutoCloseable {
    private final Communicator communicator;
    private MemorySegment send;
    private MemorySegment recv;
    private final boolean revokeOnFailure;
    private volatile boolean abandoned;

    /** LightGBM's collectives over {@code communicator}, which the caller keeps owning. */
    public CommunicatorNetwork(Communicator communicator) {
        this(communicator, false);
    }

    private CommunicatorNetwork(Communicator communicator, boolean revokeOnFailure) {
        this.communicator = communicator;
        this.revokeOnFailure = revokeOnFailure;
    }

    /**
     * As the constructor, but {@link #abandon} {@linkplain Communicator#revoke() revokes} the communicator
     * instead of aborting it: the peers' collectives fail as promptly, and the survivors can then
     * {@linkplain Communicator#shrink() shrink} it (elastic training).
     */
    public static CommunicatorNetwork revokingOnFailure(Communicator communicator) {
        return new CommunicatorNetwork(communicator, true);
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
        int me = communicator.rank();
        long[] counts = lengths(blockLen, 1);
        long total = packedTotal(blockStart, blockLen);
        MemorySegment own = input.asSlice(0, blockLen[me]);
        if (total >= 0) {
            MemorySegment ownInOutput = output.asSlice(blockStart[me], blockLen[me]);
            boolean inPlace = own.address() == ownInOutput.address();
            if (!inPlace && own.asOverlappingSlice(output).isPresent()) {
                ensureCapacity(blockLen[me], 0);
                MemorySegment.copy(own, 0, send, 0, blockLen[me]);
                own = send.asSlice(0, blockLen[me]);
            }
            communicator.allGatherV(inPlace ? ownInOutput : own, output, counts, DataType.UINT8);
            return;
        }
        long sum = 0;
        for (long c : counts) {
            sum += c;
        }
        ensureCapacity(blockLen[me], sum);
        MemorySegment.copy(own, 0, send, 0, blockLen[me]);
        communicator.allGatherV(send.asSlice(0, blockLen[me]), recv, counts, DataType.UINT8);
        long at = 0;
        for (int r = 0; r < blockLen.length; r++) {
            MemorySegment.copy(recv, at, output, blockStart[r], blockLen[r]);
            at += blockLen[r];
        }
    }

    @Override
    public void reduceScatter(MemorySegment input, int typeSize, int[] blockStart, int[] blockLen,
            MemorySegment output, LightGbmReducer reducer) {
        long[] items = lengths(blockLen, typeSize);
        long total = packedTotal(blockStart, blockLen);
        MemorySegment packed = input;
        if (total < 0) {
            long sum = 0;
            for (int len : blockLen) {
                sum += len;
            }
            ensureCapacity(sum, 0);
            long at = 0;
            for (int r = 0; r < blockLen.length; r++) {
                MemorySegment.copy(input, blockStart[r], send, at, blockLen[r]);
                at += blockLen[r];
            }
            packed = send;
        }
        communicator.reduceScatterV(packed, output, items, typeSize,
                (in, inout, count) -> reducer.reduce(in, inout, typeSize, Math.toIntExact(count * typeSize)));
    }

    /** The block lengths in units of {@code unitBytes} (LightGBM gives bytes). */
    private static long[] lengths(int[] blockLen, int unitBytes) {
        long[] out = new long[blockLen.length];
        for (int r = 0; r < blockLen.length; r++) {
            if (blockLen[r] < 0 || blockLen[r] % unitBytes != 0) {
                throw new IllegalArgumentException("LightGBM block " + r + " has " + blockLen[r]
                        + " bytes, not a multiple of its " + unitBytes + "-byte items");
            }
            out[r] = blockLen[r] / unitBytes;
        }
        return out;
    }

    /** The bytes of all blocks when they lie back to back from offset 0 (LightGBM's layout), else -1. */
    private static long packedTotal(int[] blockStart, int[] blockLen) {
        long at = 0;
        for (int r = 0; r < blockLen.length; r++) {
            if (blockStart[r] != at) {
                return -1;
            }
            at += blockLen[r];
        }
        return at;
    }

    /**
     * Aborts the communicator, or revokes it when made by {@link #revokingOnFailure}: either way the peers'
     * collectives fail at once (see {@link Communicator#abort} and {@link Communicator#revoke}).
     */
    @Override
    public void abandon(Throwable cause) {
        if (revokeOnFailure) {
            communicator.revoke();
            return;
        }
        abandoned = true;
        communicator.abort();
    }

    /** Frees the staging buffers (after an abort, the abort has); the communicator stays open. */
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
        if (sendBytes > 0 && (send == null || send.byteSize() < sendBytes)) {
            if (send != null) {
                communicator.free(send);
                send = null;
            }
            send = communicator.allocate(grown(sendBytes));
        }
        if (recvBytes > 0 && (recv == null || recv.byteSize() < recvBytes)) {
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
