package dev.panamax.collectives.internal;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;

/** A posted send or receive on a {@link Link}; completes in the link's FIFO order. */
public abstract class Request {
    protected final Link link;
    protected boolean done;

    protected Request(Link link) {
        this.link = link;
    }

    /** Advances the link; true once this request has completed. Throws on failure. */
    public final boolean poll() {
        if (!done) {
            link.progress();
            if (!done) {
                done = checkComplete();
            }
        }
        return done;
    }

    /** For requests that complete by the peer's action (a consumed send): true once they have. */
    protected boolean checkComplete() {
        return false;
    }

    public final Link link() {
        return link;
    }

    /** For error messages: "send of 4096 bytes to rank 3 over shm". */
    public abstract String describe();

    /** A posted send of all of {@code src}; {@code offset} counts the bytes handed over so far. */
    static class Send extends Request {
        final MemorySegment src;
        long offset;

        Send(Link link, MemorySegment src) {
            super(link);
            this.src = src;
        }

        @Override
        public String describe() {
            return "send of " + src.byteSize() + " bytes to rank " + link.peer() + " over " + link.kind() + " (" + offset + " sent)";
        }
    }

    /** A posted receive into {@code dst}, copying ({@code op == null}) or {@code dst = with op incoming}. */
    static class Receive extends Request {
        final MemorySegment dst;
        final MemorySegment with;
        final DataType type;
        final ReduceOp op;
        long offset;

        Receive(Link link, MemorySegment dst, MemorySegment with, DataType type, ReduceOp op) {
            super(link);
            this.dst = dst;
            this.with = with;
            this.type = type;
            this.op = op;
        }

        @Override
        public String describe() {
            return "receive of " + dst.byteSize() + " bytes from rank " + link.peer() + " over " + link.kind() + " (" + offset + " received)";
        }
    }
}
