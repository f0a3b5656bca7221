package dev.panamax.collectives.internal.transport;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.Reductions;

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

    /** For a link that reuses its completed requests ({@link Link#recycle}): pending again. */
    protected final void reopen() {
        done = false;
    }

    /**
     * Drops what this completed request refers to (buffers, registered regions, progress), which a link keeps for
     * reuse ({@link SpareRequests}): a kept request holds no caller's buffer. Overrides call this one.
     */
    protected void release() {
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

    /**
     * A posted send of all of {@code src}; {@code offset} counts the bytes handed over so far. The fields change only
     * when a link reuses the request ({@link #reuse}).
     */
    public static class Send extends Request {
        public MemorySegment src;
        public long offset;

        public Send(Link link, MemorySegment src) {
            super(link);
            this.src = src;
        }

        /** Makes this completed request a new pending send of {@code src}. */
        public void reuse(MemorySegment src) {
            this.src = src;
            this.offset = 0;
            reopen();
        }

        @Override
        protected void release() {
            src = null;
        }

        @Override
        public String describe() {
            return "send of " + src.byteSize() + " bytes to rank " + link.peer() + " over " + link.kind() + " ("
                    + offset + " sent)";
        }
    }

    /**
     * A posted receive into {@code dst}, copying ({@code op == null}) or {@code dst = with op incoming}. The fields
     * change only when a link reuses the request ({@link #reuse}).
     */
    public static class Receive extends Request {
        public MemorySegment dst;
        public MemorySegment with;
        public DataType type;
        public ReduceOp op;
        /** The factors {@code with} and the incoming data are multiplied by as they are read (1: none). */
        public double withScale;
        public double incomingScale;
        public long offset;

        public Receive(Link link, MemorySegment dst, MemorySegment with, double withScale, double incomingScale,
                DataType type, ReduceOp op) {
            super(link);
            set(dst, with, withScale, incomingScale, type, op);
        }

        /** Makes this completed request a new pending receive, with the constructor's meaning of the arguments. */
        public void reuse(MemorySegment dst, MemorySegment with, double withScale, double incomingScale,
                DataType type, ReduceOp op) {
            set(dst, with, withScale, incomingScale, type, op);
            offset = 0;
            reopen();
        }

        @Override
        protected void release() {
            dst = null;
            with = null;
        }

        private void set(MemorySegment dst, MemorySegment with, double withScale, double incomingScale,
                DataType type, ReduceOp op) {
            this.dst = dst;
            this.with = with;
            this.withScale = withScale;
            this.incomingScale = incomingScale;
            this.type = type;
            this.op = op;
        }

        /**
         * Folds {@code count} incoming elements, lying at {@code sourceOffset} of {@code source}, into the
         * destination at byte {@code at}: {@code dst = with op incoming}, the operands scaled where a pre-multiplied
         * sum asks for it (without {@code with}: the scaled incoming data). For receives with an op only.
         */
        public void fold(long at, MemorySegment source, long sourceOffset, long count) {
            if (with == null) {
                Reductions.scale(type, dst, at, source, sourceOffset, count, incomingScale);
            } else if (withScale == 1 && incomingScale == 1) {
                Reductions.reduce(type, op, dst, at, with, at, source, sourceOffset, count);
            } else {
                Reductions.scaledSum(type, dst, at, with, at, withScale, source, sourceOffset, incomingScale, count);
            }
        }

        @Override
        public String describe() {
            return "receive of " + dst.byteSize() + " bytes from rank " + link.peer() + " over " + link.kind() + " ("
                    + offset + " received)";
        }
    }
}
