package dev.panamax.collectives.internal;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;

/**
 * The transport SPI: an ordered, reliable message channel to one peer. Messages are matched in
 * FIFO order per direction: the n-th receive posted on a link takes the n-th message the peer
 * sent on it, and their lengths must agree. Posting never blocks; {@link #progress()} moves data
 * and is called by the waiting thread (no background threads on the data path).
 */
public abstract class Link implements AutoCloseable {
    protected final int peer;

    protected Link(int peer) {
        this.peer = peer;
    }

    public final int peer() {
        return peer;
    }

    /** Transport name: local, shm, tcp. */
    public abstract String kind();

    /** Posts a send of all of {@code src}; the segment must stay untouched until the request completes. */
    public abstract Request send(MemorySegment src);

    /**
     * Posts a receive of {@code dst.byteSize()} bytes. With {@code op == null} the bytes are copied
     * into {@code dst}; otherwise {@code dst = with op incoming}, element-wise ({@code with} may be
     * {@code dst} itself).
     */
    public abstract Request recv(MemorySegment dst, MemorySegment with, DataType type, ReduceOp op);

    /** Moves whatever can be moved now, in FIFO order; throws {@link dev.panamax.collectives.CollectiveException} on failure. */
    public abstract void progress();

    /** Throws {@link dev.panamax.collectives.PeerFailedException} when the peer is known to be gone. Called while idle. */
    public abstract void checkPeer();

    /** Tells the peer this side is going away (best effort) and releases resources. Idempotent. */
    @Override
    public abstract void close();
}
