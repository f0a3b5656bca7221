package dev.panamax.collectives.internal.transport;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;

/** A posted send or receive on a {@link Link}; completes in the link's FIFO order. */
public abstract class Request {
    protected final Link link;
    private boolean done;

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

    /** True once this request has completed (without advancing anything). */
    public final boolean isDone() {
        return done;
    }

    /** Called by the link when the transfer is finished. */
    public final void complete() {
        done = true;
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
    public static class Send extends Request {
        public final MemorySegment src;
        public long offset;

        public Send(Link link, MemorySegment src) {
            super(link);
            this.src = src;
        }

        @Override
        public String describe() {
            return "send of " + src.byteSize() + " bytes to rank " + link.peer() + " over " + link.kind() + " ("
                    + offset + " sent)";
        }
    }

    /** A posted receive into {@code dst}, copying ({@code op == null}) or {@code dst = with op incoming}. */
    public static class Receive extends Request {
        public final MemorySegment dst;
        public final MemorySegment with;
        public final DataType type;
        public final ReduceOp op;
        public long offset;

        public Receive(Link link, MemorySegment dst, MemorySegment with, DataType type, ReduceOp op) {
            super(link);
            this.dst = dst;
            this.with = with;
            this.type = type;
            this.op = op;
        }

        @Override
        public String describe() {
            return "receive of " + dst.byteSize() + " bytes from rank " + link.peer() + " over " + link.kind() + " ("
                    + offset + " received)";
        }
    }
}
