package dev.panamax.collectives.internal.transport;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.RevokedException;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.concurrent.WakeSignal;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The transport SPI: an ordered, reliable message channel to one peer. Messages are matched in
 * FIFO order per direction: the n-th receive posted on a link takes the n-th message the peer
 * sent on it, and their lengths must agree. Posting never blocks; {@link #progress()} moves data
 * and is called by the waiting thread (no background threads on the data path).
 *
 * <p>{@link #close()} may be called from any thread, also while another thread is inside
 * {@link #progress()} or {@link #checkPeer()} (that is how {@code Communicator.abort()} works): it
 * tells the peer at once ({@link #signalClose()}, which must be safe beside a running
 * {@code progress}), and releases the link's memory ({@link #release()}) either at once or, when a
 * thread is inside the link, as that thread leaves it. Later calls of {@code progress} and
 * {@code checkPeer} throw.
 */
public abstract class Link implements AutoCloseable {
    private static final int BUSY = 1;
    private static final int CLOSING = 2;
    private static final int CLOSED = 4;
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Link.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static final VarHandle CPU_WORD = ValueLayout.JAVA_LONG.varHandle();

    protected final int peer;
    private volatile int blame = -1;
    /** This rank's and the peer's published CPU + 1 ({@link CpuBoard}); null where the link has no such words. */
    private MemorySegment ownCpuWord;
    private MemorySegment peerCpuWord;
    /**
     * {@link #BUSY} while a thread is inside progress or checkPeer; {@link #CLOSING} once close
     * began (progress refused from then on); {@link #CLOSED} once the peer was told (release allowed).
     */
    @SuppressWarnings("unused")
    private volatile int state;

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
    public final Request recv(MemorySegment dst, MemorySegment with, DataType type, ReduceOp op) {
        return recv(dst, with, 1, 1, type, op);
    }

    /**
     * As {@link #recv(MemorySegment, MemorySegment, DataType, ReduceOp)} for a pre-multiplied sum: the operands
     * are multiplied as they are read, {@code dst = withScale * with + incomingScale * incoming} ({@code op} SUM of
     * a floating type), or {@code dst = incomingScale * incoming} when {@code with} is null. The transport folds
     * through {@link Request.Receive#fold}.
     */
    public abstract Request recv(MemorySegment dst, MemorySegment with, double withScale, double incomingScale,
            DataType type, ReduceOp op);

    /**
     * What a thread waiting on this link's requests may sleep on, or null where nothing can wake a sleeping waiter
     * (the waiter then polls, yields and parks): everything of the peer's that can advance one of this link's
     * requests signals it (shared memory: the peer rings a doorbell after its write; RDMA: the adapter signals a
     * completion channel). Links of one transport that share the signal return the same object, so that a wait on
     * several of them sleeps on it too.
     */
    public WakeSignal wakeSignal() {
        return null;
    }

    /**
     * This rank's {@link SharedWindow} region, which the peer can read, or null where the transport has none (the
     * default). Links of one rank that share a window return views of the same memory.
     */
    public MemorySegment ownWindow() {
        return null;
    }

    /** The peer's {@link SharedWindow} region as mapped here, or null where the transport has none (the default). */
    public MemorySegment peerWindow() {
        return null;
    }

    /**
     * Wakes the peer if it sleeps on its {@link #wakeSignal()}: called after a write into {@link #ownWindow()} that the
     * peer may be waiting for. Returns whether the peer was asleep (or about to sleep) and is being woken; does
     * nothing and returns false by default.
     */
    public boolean wakePeer() {
        return false;
    }

    /**
     * Whether the peer's messages arrive through memory both processes map (then a wait may spin longer while the
     * peer copies or reduces, see the runtime's ProgressLoop). False by default.
     */
    public boolean isSharedMemory() {
        return false;
    }

    /**
     * Whether {@link #shareCpu} and {@link #peerCpu} work over this link: by default, once a {@link CpuBoard} gave it
     * the two words (a peer of this host).
     */
    public boolean canShareCpu() {
        return peerCpuWord != null;
    }

    /**
     * Publishes the CPU this rank's waiting thread runs on ({@code -1}: none, it stopped waiting) where the peer can
     * read it with {@link #peerCpu()}; does nothing where the link cannot ({@link #canShareCpu()} false: ranks on
     * other hosts or in one process). Links of one rank that share the published word may publish through any of
     * them. Throws {@link IllegalStateException} once the word's mapping was released (the communicator closed).
     */
    public void shareCpu(int cpu) {
        if (ownCpuWord != null) {
            CPU_WORD.setOpaque(ownCpuWord, 0L, (long) cpu + 1);
        }
    }

    /** The CPU the peer last published with {@link #shareCpu}, or -1 (none, or not readable over this link). */
    public int peerCpu() {
        return peerCpuWord == null ? -1 : (int) ((long) CPU_WORD.getOpaque(peerCpuWord, 0L) - 1);
    }

    /**
     * Lets {@link #shareCpu} and {@link #peerCpu} work over a link whose transport has no shared memory of its own:
     * {@code own} holds this rank's CPU + 1, {@code peerWord} the peer's (each a long at offset 0, mapped by both
     * processes, valid while the link is). Called once, before the link's first wait.
     */
    public final void shareCpuThrough(MemorySegment own, MemorySegment peerWord) {
        this.ownCpuWord = own;
        this.peerCpuWord = peerWord;
    }

    /**
     * Hands back, once, a completed request of this link that the caller holds no longer: the link may post it again
     * for a later send or receive, so that a loop of small collectives allocates nothing per call. Links that do not
     * reuse requests ignore it.
     */
    public void recycle(Request r) {
    }

    /** Moves whatever can be moved now, in FIFO order; throws {@link CollectiveException} on failure or once closed. */
    public final void progress() {
        enter();
        try {
            doProgress();
        } finally {
            leave();
        }
    }

    /** Throws {@link dev.panamax.collectives.PeerFailedException} when the peer is known to be gone. Called while idle.
     * */
    public final void checkPeer() {
        enter();
        try {
            doCheckPeer();
        } finally {
            leave();
        }
    }

    /** Tells the peer this side is going away (best effort) and releases resources. Idempotent; any thread. */
    @Override
    public final void close() {
        int prev = (int) STATE.getAndBitwiseOr(this, CLOSING);
        if ((prev & CLOSING) != 0) {
            return;
        }
        try {
            signalClose();
        } finally {
            // Exactly one of this and leave() sees the other's bit and releases.
            prev = (int) STATE.getAndBitwiseOr(this, CLOSED);
            if ((prev & BUSY) == 0) {
                release();
            }
        }
    }

    /**
     * Blame codes at or above this say "revoked by rank (code - REVOKED)" rather than "rank code
     * failed"; the transports carry codes without reading them.
     */
    private static final int REVOKED = 1 << 24;

    /**
     * {@link #close()} after this rank failed because rank {@code failedRank} did: the transport
     * passes the blame on where it can, so the peers' errors name the rank that failed first
     * rather than this one. Called by the thread that holds the communicator's lock.
     */
    public final void closeBlaming(int failedRank) {
        blame = failedRank;
        close();
    }

    /**
     * {@link #close()} because rank {@code revoker} revoked the communicator: the peer's waits fail
     * with a {@link RevokedException} naming it (and it passes the revoke on). Same rules as
     * {@link #closeBlaming}.
     */
    public final void closeRevoked(int revoker) {
        blame = REVOKED + revoker;
        close();
    }

    /**
     * The error a rank raises when this link's peer gave up and passed on {@code code} (see
     * {@link #closeBlaming}, {@link #closeRevoked}): the rank that failed first, or the revoke.
     */
    protected final CollectiveException peerGaveUp(int self, int code, Throwable cause) {
        if (code >= REVOKED) {
            int revoker = code - REVOKED;
            RevokedException e = new RevokedException(revoker, "rank " + self
                    + ": the communicator was revoked by rank " + revoker + " (heard from rank " + peer + ")");
            if (cause != null) {
                e.initCause(cause);
            }
            return e;
        }
        return new PeerFailedException(code, "rank " + self + ": rank " + code + " failed (peer rank " + peer
                + " gave up because of it)", cause);
    }

    /** The code to pass on as this link closes ({@link #closeBlaming}, {@link #closeRevoked}), or -1. */
    protected final int blame() {
        return blame;
    }

    /** True once {@link #close()} was called. */
    public final boolean isClosed() {
        return ((int) STATE.getVolatile(this) & CLOSING) != 0;
    }

    private void enter() {
        if (!STATE.compareAndSet(this, 0, BUSY)) {
            throw new CollectiveException("the link to rank " + peer + " (" + kind() + ") was closed on this side");
        }
    }

    private void leave() {
        int prev = (int) STATE.getAndBitwiseAnd(this, ~BUSY);
        if ((prev & CLOSED) != 0) {
            // close() finished telling the peer while we were inside: it left the release to us.
            release();
        }
    }

    /** The transport's progress; called by one thread at a time, never after {@link #release()}. */
    protected abstract void doProgress();

    /** The transport's liveness check; same rules as {@link #doProgress()}. */
    protected abstract void doCheckPeer();

    /**
     * Tells the peer this side is going away. Called once, possibly while another thread is inside
     * {@link #doProgress()}: it must touch nothing that progress changes or frees.
     */
    protected abstract void signalClose();

    /** Frees the link's memory and handles. Called once, after {@link #signalClose()}, with no thread inside the link.
     * */
    protected abstract void release();
}
