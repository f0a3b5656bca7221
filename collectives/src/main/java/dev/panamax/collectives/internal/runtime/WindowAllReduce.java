package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.internal.observe.CollectiveEvent;
import dev.panamax.collectives.internal.observe.Events;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.Request;
import dev.panamax.collectives.internal.transport.SharedWindow;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.Reductions;

import java.lang.foreign.MemorySegment;
import java.util.Locale;

/**
 * Small all-reduces in one synchronisation over the ranks' {@link SharedWindow}s, where every peer shares memory with
 * this rank: each rank writes its input into its own window and publishes the call's number, waits until every
 * peer's window shows it, and folds all the inputs in rank order, so every rank computes the same bits. A schedule
 * would take log2(n) exchanges (butterfly) or n-1 messages per rank (direct), each through a link's requests; here a
 * rank writes once and reads n-1 windows. Where ranks outnumber CPUs that is what a rank does in each of its turns on
 * a CPU, and the shorter the turn, the sooner its CPU's other rank runs.
 *
 * <p>Waits go through the communicator's {@link ProgressLoop} (timeout, peer liveness, abort, the idle rules): one
 * request per peer that completes when the peer's window shows the call. Each call's byte count and a code of its
 * type and operation travel in the window, so a rank that called something else fails the call on every rank that
 * reads it, naming both calls, instead of folding garbage.
 */
final class WindowAllReduce {
    private final int rank;
    private final int size;
    private final long id;
    private final SharedWindow[] windows;
    private final Link[] links;
    private final Arrival[] arrivals;
    private final long capacityBytes;
    private long sequence;

    private WindowAllReduce(int rank, Link[] links, SharedWindow[] windows, long id) {
        this.rank = rank;
        this.size = links.length;
        this.links = links;
        this.windows = windows;
        this.id = id;
        long capacity = Long.MAX_VALUE;
        for (SharedWindow w : windows) {
            capacity = Math.min(capacity, w.capacityBytes());
        }
        this.capacityBytes = capacity;
        this.arrivals = new Arrival[size - 1];
        int i = 0;
        for (int q = 0; q < size; q++) {
            if (q != rank) {
                arrivals[i++] = new Arrival(links[q], windows[q]);
            }
        }
    }

    /**
     * The window all-reduce of a communicator whose every peer shares a window with this rank (one region of this
     * rank's, readable by all), or null: a single rank, a peer over another transport, or a rank whose window
     * carries nothing. Every rank answers alike: the transports are chosen alike on both sides of each pair, and the
     * capacity is the smallest any rank's window declares.
     */
    static WindowAllReduce over(int rank, Link[] links, long id) {
        if (links.length < 2) {
            return null;
        }
        SharedWindow[] windows = new SharedWindow[links.length];
        MemorySegment own = null;
        for (int q = 0; q < links.length; q++) {
            if (q == rank) {
                continue;
            }
            Link l = links[q];
            if (l == null || l.ownWindow() == null || l.peerWindow() == null) {
                return null;
            }
            if (own == null) {
                own = l.ownWindow();
            } else if (l.ownWindow().address() != own.address()) {
                return null; // links of different inboxes (not one transport session)
            }
            windows[q] = new SharedWindow(l.peerWindow());
        }
        windows[rank] = new SharedWindow(own);
        WindowAllReduce w = new WindowAllReduce(rank, links, windows, id);
        return w.capacityBytes > 0 ? w : null;
    }

    /** Whether an all-reduce of {@code count} elements of {@code type} fits the windows (and moves anything). */
    boolean fits(long count, DataType type) {
        return count > 0 && count * type.byteSize() <= capacityBytes;
    }

    /** The most bytes per call, the smallest of the ranks' windows. */
    long capacityBytes() {
        return capacityBytes;
    }

    /**
     * {@code recv = send[0] op ... op send[n-1]}, by rank; {@code op} AVG averages as the schedules do (floating types
     * but bfloat16 scale each input by 1/n as it enters the sum; bfloat16 and integers sum, then divide).
     * {@code preMultiplied}: a pre-multiplied sum, each rank's input multiplied by the scalar it published
     * ({@code scalar} is this rank's; {@code op} SUM).
     */
    void run(ProgressLoop loop, MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op,
            boolean preMultiplied, double scalar) {
        CollectiveEvent event = Events.beginCollective();
        Throwable failure = null;
        long k = ++sequence;
        long bytes = count * type.byteSize();
        long code = code(type, op, preMultiplied);
        try {
            loop.begin("all-reduce", "window", 1);
            windows[rank].publish(k, send, bytes, code, scalar);
            boolean woke = false;
            for (Link l : links) {
                if (l != null) {
                    woke |= l.wakePeer();
                }
            }
            if (woke) {
                loop.wokeSleepingPeer();
            }
            for (Arrival a : arrivals) {
                a.expect(k, bytes);
            }
            loop.step(0, "window");
            loop.awaitAll(arrivals, arrivals.length);
            for (int q = 0; q < size; q++) {
                SharedWindow w = windows[q];
                if (w.byteCount(k) != bytes || w.code(k) != code) {
                    throw new CollectiveException("rank " + q + " called " + describe(w.byteCount(k), w.code(k))
                            + " but rank " + rank + " called " + describe(bytes, code)
                            + " (mismatched counts, types or operations across ranks)");
                }
            }
            fold(send, recv, count, type, op, preMultiplied, k);
        } catch (IllegalStateException e) {
            // Memory closed under the call: a peer's window, unmapped as an abort closed the links from another
            // thread, or the caller's buffer.
            failure = new CollectiveException("rank " + rank + ": all-reduce(window): memory it read was closed "
                    + "during the call (the links, by an abort, or the caller's buffer)", e);
            throw (CollectiveException) failure;
        } catch (RuntimeException | Error t) {
            failure = t;
            throw t;
        } finally {
            loop.end();
            Events.commit(event, id, rank, size, "all-reduce", "window", count, type, -1, failure);
        }
    }

    private void fold(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op,
            boolean preMultiplied, long k) {
        // This rank's input is read where the caller left it rather than from its copy in the window, except in
        // place from rank 2 on, where the fold has overwritten it before its turn comes.
        boolean ownFromSend = rank < 2 || send.address() != recv.address();
        MemorySegment s0 = source(0, send, ownFromSend);
        MemorySegment s1 = source(1, send, ownFromSend);
        long o0 = offset(0, k, ownFromSend);
        long o1 = offset(1, k, ownFromSend);
        if (preMultiplied || CommunicatorImpl.averagesByScaling(type, op)) {
            double average = 1.0 / size;
            Reductions.scaledSum(type, recv, 0, s0, o0, preMultiplied ? windows[0].scalar(k) : average, s1, o1,
                    preMultiplied ? windows[1].scalar(k) : average, count);
            for (int q = 2; q < size; q++) {
                Reductions.scaledSum(type, recv, 0, recv, 0, 1, source(q, send, ownFromSend),
                        offset(q, k, ownFromSend), preMultiplied ? windows[q].scalar(k) : average, count);
            }
            return;
        }
        // The kernels reduce AVG as SUM; the division follows.
        Reductions.reduce(type, op, recv, 0, s0, o0, s1, o1, count);
        for (int q = 2; q < size; q++) {
            Reductions.reduce(type, op, recv, 0, recv, 0, source(q, send, ownFromSend),
                    offset(q, k, ownFromSend), count);
        }
        if (op == ReduceOp.AVG) {
            Reductions.divide(type, recv, 0, count, size);
        }
    }

    /** Where rank q's input lies: its window, or this rank's send buffer ({@link #offset} says where in it). */
    private MemorySegment source(int q, MemorySegment send, boolean ownFromSend) {
        return q == rank && ownFromSend ? send : windows[q].segment();
    }

    private long offset(int q, long k, boolean ownFromSend) {
        return q == rank && ownFromSend ? 0 : windows[q].dataOffset(k);
    }

    /** What a call publishes beside its data, so that readers can tell calls apart. */
    static long code(DataType type, ReduceOp op, boolean preMultiplied) {
        return ((long) type.ordinal() << 16) | ((long) op.ordinal() << 1) | (preMultiplied ? 1 : 0);
    }

    private static String describe(long bytes, long code) {
        DataType[] types = DataType.values();
        ReduceOp[] ops = ReduceOp.values();
        int t = (int) (code >>> 16);
        int o = (int) ((code >>> 1) & 0x7fff);
        String type = t < types.length ? types[t].canonicalName() : "type " + t;
        String op = (code & 1) != 0 ? "pre-multiplied sum"
                : o < ops.length ? ops[o].name().toLowerCase(Locale.ROOT) : "op " + o;
        return "an all-reduce of " + bytes + " bytes of " + type + " (" + op + ")";
    }

    /** Completes once the peer's window shows the awaited call. */
    private static final class Arrival extends Request {
        private final SharedWindow window;
        private long awaited;
        private long awaitedBytes;

        Arrival(Link link, SharedWindow window) {
            super(link);
            this.window = window;
        }

        void expect(long call, long bytes) {
            awaited = call;
            awaitedBytes = bytes;
            reopen();
        }

        @Override
        protected boolean checkComplete() {
            return window.shows(awaited, awaitedBytes);
        }

        @Override
        public String describe() {
            return "window all-reduce call " + awaited + " of rank " + link.peer() + " over " + link.kind()
                    + " (its window shows call " + window.sequence() + ")";
        }
    }
}
