package dev.panamax.collectives.internal.transport.verbs;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.internal.transport.BlameHeader;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.Request;
import dev.panamax.collectives.internal.transport.SpareRequests;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.concurrent.WakeSignal;
import dev.panamax.verbs.Access;
import dev.panamax.verbs.CompletionQueue;
import dev.panamax.verbs.MemoryRegion;
import dev.panamax.verbs.Opcode;
import dev.panamax.verbs.QpEndpoint;
import dev.panamax.verbs.QueuePair;
import dev.panamax.verbs.ReceiveRequest;
import dev.panamax.verbs.SendRequest;
import dev.panamax.verbs.WorkCompletions;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The RDMA transport: one reliable-connected queue pair per peer, receiver-driven and zero-copy.
 *
 * <p>Protocol. For every posted receive the receiver <em>advertises</em> where the bytes should go
 * (address, rkey, length; a 32-byte SEND). The sender matches the n-th advertisement with its n-th
 * send in FIFO order and RDMA-writes the bytes there, the last write of each advertisement with
 * immediate data (the advertisement's sequence number), which completes the receive on the other
 * side. Where the bytes go:
 * <ul>
 *   <li>a plain receive into a buffer the registration cache could register: straight into the
 *       user's (or scratch) segment, in pieces of at most {@value #MAX_PIECE_BYTES} bytes;</li>
 *   <li>a reducing receive ({@code dst = with op incoming}), or a buffer that could not be
 *       registered: into one of this link's pre-registered staging chunks, from which the CPU
 *       reduces (or copies) into the destination while the next chunk is in flight.</li>
 * </ul>
 * The sender writes from its segment directly when it is registered, else it copies through its
 * own staging chunks. Flow control needs no credits of its own: at most {@value #ADVERTS} of this
 * side's advertisements are unanswered at any time.
 *
 * <p>Small messages go eagerly. A message of at most the eager size
 * ({@code PANAMAX_VERBS_EAGER_BYTES}, the smaller of both sides' settings) is never advertised: the sender
 * writes it at once (from its buffer when registered, else copied into a registered send slot), with
 * immediate data (a flag and its length), into the next of the receiver's {@value #EAGER_SLOTS}
 * pre-registered eager slots, whose address both sides exchange when they connect; one of at most
 * {@code PANAMAX_VERBS_INLINE_BYTES} (256, capped by what the device grants) goes inline, copied into the work
 * request by the post, so its send completes at once (advertisements and credit words go inline too). The
 * receiver copies (or reduces) it out when the matching receive is posted, at once if that receive is already
 * waiting. A message small enough to go inline with an 8-byte footer (its sequence number and length; up to 248
 * bytes by default) is written with the footer, ending at the slot's end: the receiver finds it by reading the
 * footer's word on every progress call, and polls its completion queue only every {@value #POLL_EVERY_CALLS} calls
 * while nothing it waits for needs a completion (a poll is a call into the driver; the completion still comes, and
 * wakes a sleeping wait). The receiver gives slots back as credits, counting only slots whose completion it
 * has polled (each holds a receive work request till then): it RDMA-writes the count of slots it has taken into a
 * word of the sender's, once half the slots are taken, or at once when the sender, out of credit, asks for them
 * (it RDMA-writes its sent count into a word of the receiver's). A sender without credit waits. Both
 * sides classify each message by its size, and the sender keeps messages in order, so the n-th receive
 * still meets the n-th send; an eager arrival whose length differs from the receive's is reported as
 * mismatched counts (a large send meeting a small receive waits for an advertisement that never comes,
 * and times out). The receive queue ({@code 2 x ADVERTS + EAGER_SLOTS} work requests, reposted as they
 * complete) always has room for the peer's advertisements, answering writes and eager writes.
 *
 * <p>A wait on these links sleeps, once it has spun and yielded, on the domain's completion channel, which every
 * link's completion queue signals ({@link CompletionWakeSignal}): every step of the protocol above ends in a
 * completion on one side or the other, except the credit and ask words.
 *
 * <p>The authenticated TCP connection that set the queue pair up stays open beside it, idle: its
 * end of stream tells that the peer died or closed (RDMA alone only tells once a write times
 * out), and on an abort it carries the blame (which rank failed first) like the TCP transport.
 * Every work request and scatter/gather entry is preallocated and patched in place, and completed requests handed
 * back ({@link #recycle}) are posted again: a loop of small messages allocates nothing.
 */
public final class VerbsLink extends Link {
    /** Unanswered advertisements per direction. */
    static final int ADVERTS = 32;
    /** Eager messages the sender may have written that the receiver has not taken yet. */
    static final int EAGER_SLOTS = 16;
    /** The largest eager size a setting may ask for (the immediate data carries the length). */
    static final int MAX_EAGER_BYTES = 65536;
    private static final int EAGER_FLAG = 0x8000_0000;
    /** In an eager write's immediate data: the message ends in a footer (it is found by reading memory too). */
    private static final int FOOTED_FLAG = 0x4000_0000;
    private static final int LENGTH_MASK = 0x3FFF_FFFF;
    /** The footer after a small eager message: its sequence number (high half) and length, with bit 31 set. */
    private static final int FOOTER_BYTES = 8;
    /** Bit 31 of a footer: set in every footer, so that a cleared word (0) never matches. */
    private static final long FOOTER_MARK = 0x8000_0000L;
    /** Progress calls between two polls of the completion queue while nothing awaited needs a completion. */
    static final int POLL_EVERY_CALLS = 16;
    private static final int SEQ_MASK = 0x7FFF_FFFF;
    /** Taken eager slots given back in one write, unless the sender asks for them sooner. */
    private static final int CREDIT_BATCH = EAGER_SLOTS / 2;
    /** The offset of the ask word from the credit word, on both sides. */
    private static final int ASK_WORD = 8;
    /** A send work request's chunk code at or above this names an eager send slot, not a staging chunk. */
    private static final int EAGER_WQE = 1 << 16;
    private static final int RECV_WQES = 2 * ADVERTS + EAGER_SLOTS;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final int SEND_WQES = 128;
    private static final int CTRL_BYTES = 32;
    private static final int CHUNKS = 4;
    static final int CHUNK_BYTES = 256 * 1024;
    static final long MAX_PIECE_BYTES = 1L << 30;
    private static final long RECV_TAG = 1L << 62;
    private static final int POLL_BATCH = 16;

    private final int self;
    private final VerbsDomain domain;
    private final SocketChannel channel;
    private final Arena arena = Arena.ofShared();
    private final CompletionQueue cq;
    private final QueuePair qp;
    /** Receive slots (RECV_WQES x 32 bytes), then advertisement send slots (ADVERTS x 32 bytes). */
    private final MemoryRegion ctrl;
    /** Receive staging chunks, then send staging chunks. */
    private final MemoryRegion staging;
    private final SendRequest wr;
    private final ReceiveRequest rwr;
    private final WorkCompletions wc;
    private final ByteBuffer liveness = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
    /**
     * Eager memory: receive slots, send slots (EAGER_SLOTS x slotBytes each), then the words the peer
     * writes into (its taken count; its sent count when it waits for credit, at +ASK_WORD) and the
     * words this side's own are written from.
     */
    private final MemoryRegion eager;
    private final int slotBytes;
    /** The largest eager message this side sends with a footer: whole with it in one inline write. */
    private final int footedBytes;
    /** The largest the peer sends with a footer (set when connecting). */
    private int peerFootedBytes;
    /** The largest send copied into its work request (IBV_SEND_INLINE): the setting, capped by the device. */
    private final int inlineBytes;
    private final long creditInAt;
    private final long creditOutAt;
    /** The eager size both sides use (set when connecting). */
    private int eagerBytes;
    private long peerSlots;
    /** The rkey of the peer's eager region: its slots and its credit and ask words. */
    private int peerEagerRkey;
    private int peerSlotBytes;
    private long peerCreditWord;

    // Receive side.
    private final ArrayDeque<RecvReq> toAdvertise = new ArrayDeque<>();
    private final ArrayDeque<RecvReq> awaiting = new ArrayDeque<>();
    private final RecvReq[] outReq = new RecvReq[ADVERTS];
    private final long[] outOffset = new long[ADVERTS];
    private final long[] outBytes = new long[ADVERTS];
    private final int[] outChunk = new int[ADVERTS];
    private int outHead;
    private int outCount;
    private int advertSeq;
    private final boolean[] recvChunkBusy = new boolean[CHUNKS];
    /** Eager messages arrived, taken by receives, and the taken count last given back to the peer. */
    private long eagerArrived;
    private long eagerTaken;
    private long eagerReturned;
    /** The peer's last request for credit that was answered. */
    private long askAnswered;
    private final int[] eagerLength = new int[EAGER_SLOTS];
    /** Whether each arrived eager message ends in a footer at its slot's end (else it starts at the slot's start). */
    private final boolean[] eagerFooted = new boolean[EAGER_SLOTS];
    /** Eager messages whose completion was polled (each also counted by eagerArrived, maybe earlier). */
    private long eagerCompleted;
    /** Progress calls since the completion queue was last polled. */
    private int callsSincePoll;
    /** Whether a footer told of an eager message since the completion queue was last polled (see deliverEager). */
    private boolean footerSincePoll;
    /** Posted send work requests a send request waits for (inline ones wait for none). */
    private int ownedWqes;
    /**
     * Set as a sleep is prepared (possibly by another communicator's thread sharing the domain): the next progress
     * call polls the completion queue, so that a completion that came before the notification was asked for is seen.
     */
    private volatile boolean pollRequested;

    // Send side.
    private final ArrayDeque<SendReq> posting = new ArrayDeque<>();
    /** Completed requests handed back ({@link #recycle}), posted again by later sends and receives. */
    private final SpareRequests<SendReq, RecvReq> spares = new SpareRequests<>(this, SendReq.class, RecvReq.class);
    private final long[] inAddress = new long[ADVERTS];
    private final int[] inRkey = new int[ADVERTS];
    private final long[] inBytes = new long[ADVERTS];
    private final long[] inTotal = new long[ADVERTS];
    private final int[] inSeq = new int[ADVERTS];
    private int inHead;
    private int inCount;
    /** Bytes of the head advertisement already written. */
    private long inWritten;
    private final boolean[] sendChunkBusy = new boolean[CHUNKS];
    private long eagerSent;
    /** The sent count at which this side last asked the peer for credit. */
    private long askedAt;
    /** Whether the last eager send found no credit (read by the wake signal). */
    private volatile boolean awaitingCredit;
    private final boolean[] eagerSlotBusy = new boolean[EAGER_SLOTS];

    /** Posted send work requests in order (their completions come in the same order). */
    private final SendReq[] wqeSend = new SendReq[SEND_WQES];
    private final long[] wqeBytes = new long[SEND_WQES];
    private final int[] wqeChunk = new int[SEND_WQES];
    private int wqeHead;
    private int wqeCount;

    private VerbsLink(int self, int peer, SocketChannel channel, VerbsDomain domain) {
        super(peer);
        this.self = self;
        this.channel = channel;
        this.domain = domain;
        CompletionQueue c = null;
        QueuePair q = null;
        MemoryRegion ctrlMr = null;
        MemoryRegion stagingMr = null;
        // The footer's word, at the slot's end, is never written by a message without one.
        this.slotBytes = domain.eagerBytes == 0 ? 0 : (domain.eagerBytes + FOOTER_BYTES + 63) & ~63;
        this.creditInAt = 2L * EAGER_SLOTS * slotBytes;
        this.creditOutAt = creditInAt + 64;
        try {
            c = domain.context.createCompletionQueue(SEND_WQES + RECV_WQES, domain.wakeSignal.channel());
            q = domain.createQueuePair(c, SEND_WQES, RECV_WQES);
            ctrlMr = domain.pd.register(arena.allocate((long) (RECV_WQES + ADVERTS) * CTRL_BYTES, 64),
                    Access.LOCAL_WRITE);
            stagingMr = domain.pd.register(arena.allocate(2L * CHUNKS * CHUNK_BYTES, 4096),
                    Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            this.eager = domain.pd.register(arena.allocate(creditOutAt + 64, 4096),
                    Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        } catch (RuntimeException e) {
            if (stagingMr != null) {
                stagingMr.close();
            }
            if (ctrlMr != null) {
                ctrlMr.close();
            }
            if (q != null) {
                q.close();
            }
            if (c != null) {
                c.close();
            }
            arena.close();
            throw e;
        }
        this.cq = c;
        this.qp = q;
        this.inlineBytes = domain.inlineBytes(q);
        this.footedBytes = Math.max(0, Math.min(domain.eagerBytes, (inlineBytes - FOOTER_BYTES) & ~7));
        this.ctrl = ctrlMr;
        this.staging = stagingMr;
        this.wr = SendRequest.allocate(arena);
        this.rwr = ReceiveRequest.allocate(arena);
        this.wc = WorkCompletions.allocate(arena, POLL_BATCH);
        domain.retain();
        domain.wakeSignal.add(this);
    }

    /**
     * Sets up the queue pair to {@code peer} over {@code channel} (authenticated and blocking):
     * both sides send their endpoint (QPN, PSN, LID, GID) and read the other's, then move the
     * queue pair to RTS. The channel stays open, non-blocking, for liveness.
     */
    public static VerbsLink connect(int self, int peer, SocketChannel channel, VerbsDomain domain,
            long timeoutNanos) throws IOException {
        VerbsLink link = new VerbsLink(self, peer, channel, domain);
        try {
            int psn = ThreadLocalRandom.current().nextInt(1 << 24);
            QpEndpoint local = link.qp.localEndpoint(domain.port, domain.gidIndex, psn);
            channel.configureBlocking(true);
            channel.socket().setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, timeoutNanos / 1_000_000)));
            DataOutputStream out = new DataOutputStream(channel.socket().getOutputStream());
            DataInputStream in = new DataInputStream(channel.socket().getInputStream());
            byte[] mine = local.toBytes();
            out.writeInt(mine.length);
            out.write(mine);
            out.writeInt(domain.eagerBytes);
            out.writeInt(link.slotBytes);
            out.writeLong(link.eager.address());
            out.writeInt(link.eager.rkey());
            out.writeLong(link.eager.address() + link.creditInAt);
            out.writeInt(link.footedBytes);
            out.flush();
            QpEndpoint remote;
            try {
                int n = in.readInt();
                if (n <= 0 || n > 4096) {
                    throw new CollectiveException("rank " + self + ": rank " + peer
                            + " sent a malformed queue-pair endpoint (" + n + " bytes)");
                }
                byte[] theirs = new byte[n];
                in.readFully(theirs);
                remote = QpEndpoint.fromBytes(theirs);
                int theirEager = in.readInt();
                link.peerSlotBytes = in.readInt();
                link.peerSlots = in.readLong();
                link.peerEagerRkey = in.readInt();
                link.peerCreditWord = in.readLong();
                link.peerFootedBytes = in.readInt();
                if (theirEager < 0 || (theirEager > 0 && theirEager + FOOTER_BYTES > link.peerSlotBytes)
                        || link.peerFootedBytes < 0 || link.peerFootedBytes > theirEager) {
                    throw new CollectiveException("rank " + self + ": rank " + peer + " sent a malformed eager setup ("
                            + theirEager + " bytes in slots of " + link.peerSlotBytes + ", " + link.peerFootedBytes
                            + " with a footer)");
                }
                link.eagerBytes = Math.min(domain.eagerBytes, theirEager);
                link.peerFootedBytes = Math.min(link.peerFootedBytes, link.eagerBytes);
            } catch (SocketTimeoutException e) {
                throw new CollectiveTimeoutException("rank " + self + ": rank " + peer
                        + " did not send its queue-pair endpoint in time");
            }
            link.qp.connect(local, remote, domain.port, domain.gidIndex, domain.mtu);
            for (int slot = 0; slot < RECV_WQES; slot++) {
                link.postReceive(slot);
            }
            channel.socket().setSoTimeout(0);
            channel.configureBlocking(false);
            return link;
        } catch (IOException | RuntimeException e) {
            link.close();
            throw e;
        }
    }

    @Override
    public String kind() {
        return "verbs";
    }

    @Override
    public Request send(MemorySegment src) {
        SendReq r = spares.pollSend();
        if (r == null) {
            r = new SendReq(this, src);
        } else {
            r.reuse(src);
        }
        if (src.byteSize() == 0) {
            r.markDone(); // nothing crosses the wire; both sides agree on the empty message
        } else {
            posting.add(r);
        }
        return r;
    }

    @Override
    public Request recv(MemorySegment dst, MemorySegment with, double withScale, double incomingScale,
            DataType type, ReduceOp op) {
        RecvReq r = spares.pollReceive();
        if (r == null) {
            r = new RecvReq(this, dst, with, withScale, incomingScale, type, op);
        } else {
            r.reuse(dst, with, withScale, incomingScale, type, op);
        }
        if (dst.byteSize() == 0) {
            r.markDone();
        } else {
            if (dst.byteSize() > eagerBytes) {
                toAdvertise.add(r);
            }
            awaiting.add(r);
        }
        return r;
    }

    /**
     * Keeps a completed request for a later send or receive: once done, a request is in none of this link's queues
     * (a send leaves them at its last work completion, a receive as its last bytes arrive).
     */
    @Override
    public void recycle(Request r) {
        spares.keep(r);
    }

    @Override
    protected void doProgress() {
        if (completionAwaited() || ++callsSincePoll >= POLL_EVERY_CALLS) {
            pollCompletions();
        }
        pollFooters();
        deliverEager();
        advertise();
        write();
        returnCredits();
    }

    /**
     * Whether something this side waits for comes only with a completion, so that the queue is polled on this call:
     * a send's completion, an advertisement (the peer's, for a large send, or the data asked for by one of this
     * side's), an eager message without a footer, the
     * receive queue's room for the peer's next eager messages (their credit is given back only for polled ones),
     * a full send queue, or a sleep being prepared. The rest of the time (small messages with footers, found in
     * memory) the queue is polled every {@value #POLL_EVERY_CALLS} calls: a poll is a call into the driver, which
     * costs more than the footer's read, and it was what a round trip spent most on besides the post (software RoCE,
     * docs/results/performance.md).
     */
    private boolean completionAwaited() {
        if (pollRequested || ownedWqes > 0 || outCount > 0 || wqeCount > SEND_WQES / 2
                || eagerTaken - eagerReturned >= CREDIT_BATCH) {
            return true;
        }
        SendReq sending = posting.peek();
        if (sending != null && sending.src.byteSize() > eagerBytes) {
            return true; // it needs the peer's advertisement
        }
        RecvReq next = awaiting.peek();
        if (next != null && next.dst.byteSize() > peerFootedBytes) {
            return true;
        }
        long asked = (long) LONG.getVolatile(eager.segment(), creditInAt + ASK_WORD);
        return asked != askAnswered && eagerTaken > eagerReturned;
    }

    private void pollCompletions() {
        callsSincePoll = 0;
        pollRequested = false;
        footerSincePoll = false;
        int n;
        while ((n = cq.poll(wc)) > 0) {
            for (int i = 0; i < n; i++) {
                if (!wc.isSuccess(i)) {
                    throw completionFailure(i);
                }
                long id = wc.wrId(i);
                if ((id & RECV_TAG) != 0) {
                    int slot = (int) (id & ~RECV_TAG);
                    if (!wc.hasImmediate(i)) {
                        advertisementReceived(slot);
                    } else {
                        int imm = wc.immediate(i);
                        if ((imm & EAGER_FLAG) != 0) {
                            // Its footer may have told of it already: eager messages complete in order.
                            if (++eagerCompleted > eagerArrived) {
                                eagerArrived(imm & LENGTH_MASK, (imm & FOOTED_FLAG) != 0);
                            }
                        } else {
                            arrived(imm);
                        }
                    }
                    postReceive(slot);
                } else {
                    sendCompleted();
                }
            }
            if (n < POLL_BATCH) {
                return;
            }
        }
    }

    private RuntimeException completionFailure(int i) {
        String what = "rank " + self + ": RDMA with rank " + peer + " failed: " + wc.statusString(i) + " (status "
                + wc.status(i) + ")";
        int status = wc.status(i);
        // Flushed, retries exhausted, receiver not ready for ever: the peer's queue pair is gone.
        if (status == 5 || status == 12 || status == 13) {
            return new PeerFailedException(peer, what + "; the peer died or closed its communicator", null);
        }
        return new CollectiveException(what);
    }

    /** The peer wrote the bytes of our oldest unanswered advertisement. */
    private void arrived(int imm) {
        if (outCount == 0 || imm != (advertSeqAt(outHead) & SEQ_MASK)) {
            throw new CollectiveException("rank " + self + ": protocol error on the RDMA link to rank " + peer
                    + ": write for advertisement " + imm + " while expecting "
                    + (outCount == 0 ? "none" : advertSeqAt(outHead) & SEQ_MASK));
        }
        RecvReq r = outReq[outHead];
        long offset = outOffset[outHead];
        long bytes = outBytes[outHead];
        int chunk = outChunk[outHead];
        outReq[outHead] = null;
        outHead = (outHead + 1) % ADVERTS;
        outCount--;
        if (chunk >= 0) {
            long from = (long) chunk * CHUNK_BYTES; // offsets into the region, not slices: a message makes no object
            if (r.op == null) {
                MemorySegment.copy(staging.segment(), from, r.dst, offset, bytes);
            } else {
                r.fold(offset, staging.segment(), from, bytes / r.type.byteSize());
            }
            recvChunkBusy[chunk] = false;
        }
        r.offset += bytes;
        if (r.offset == r.dst.byteSize()) {
            r.markDone();
            awaiting.poll();
        }
    }

    /** The sequence number of the advertisement in ring slot {@code slot} (they are consecutive from the head). */
    private int advertSeqAt(int slot) {
        return advertSeq - outCount + ((slot - outHead + ADVERTS) % ADVERTS);
    }

    private void advertisementReceived(int slot) {
        if (inCount == ADVERTS) {
            throw new CollectiveException("rank " + self + ": protocol error: rank " + peer + " advertised more than "
                    + ADVERTS + " receives");
        }
        MemorySegment m = ctrl.segment();
        long at = (long) slot * CTRL_BYTES;
        int tail = (inHead + inCount) % ADVERTS;
        inAddress[tail] = m.get(ValueLayout.JAVA_LONG_UNALIGNED, at);
        inBytes[tail] = m.get(ValueLayout.JAVA_LONG_UNALIGNED, at + 8);
        inTotal[tail] = m.get(ValueLayout.JAVA_LONG_UNALIGNED, at + 16);
        inRkey[tail] = m.get(ValueLayout.JAVA_INT_UNALIGNED, at + 24);
        inSeq[tail] = m.get(ValueLayout.JAVA_INT_UNALIGNED, at + 28);
        inCount++;
    }

    private void sendCompleted() {
        if (wqeCount == 0) {
            throw new CollectiveException("rank " + self
                    + ": protocol error: a send completion with nothing posted to rank " + peer);
        }
        SendReq s = wqeSend[wqeHead];
        if (s != null) {
            ownedWqes--;
            s.completed += wqeBytes[wqeHead];
            if (s.completed == s.src.byteSize()) {
                s.markDone();
            }
        }
        int chunk = wqeChunk[wqeHead];
        if (chunk >= EAGER_WQE) {
            eagerSlotBusy[chunk - EAGER_WQE] = false;
        } else if (chunk >= 0) {
            sendChunkBusy[chunk] = false;
        }
        wqeSend[wqeHead] = null;
        wqeHead = (wqeHead + 1) % SEND_WQES;
        wqeCount--;
    }

    /** Advertises the posted receives, in order, as far as advertisements and staging chunks allow. */
    private void advertise() {
        RecvReq r;
        while ((r = toAdvertise.peek()) != null && outCount < ADVERTS && wqeCount < SEND_WQES) {
            long total = r.dst.byteSize();
            if (r.advertised == 0 && r.op == null) {
                r.region = domain.registered(r.dst);
            }
            long address;
            int rkey;
            long bytes;
            int chunk = -1;
            if (r.region != null) {
                bytes = Math.min(MAX_PIECE_BYTES, total - r.advertised);
                address = r.dst.address() + r.advertised;
                rkey = r.region.rkey();
            } else {
                chunk = freeChunk(recvChunkBusy);
                if (chunk < 0) {
                    return;
                }
                recvChunkBusy[chunk] = true;
                bytes = Math.min(CHUNK_BYTES, total - r.advertised);
                address = staging.address() + (long) chunk * CHUNK_BYTES;
                rkey = staging.rkey();
            }
            int slot = (outHead + outCount) % ADVERTS;
            outReq[slot] = r;
            outOffset[slot] = r.advertised;
            outBytes[slot] = bytes;
            outChunk[slot] = chunk;
            outCount++;
            int seq = advertSeq++;
            long at = (long) (RECV_WQES + seq % ADVERTS) * CTRL_BYTES;
            MemorySegment m = ctrl.segment();
            m.set(ValueLayout.JAVA_LONG_UNALIGNED, at, address);
            m.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 8, bytes);
            m.set(ValueLayout.JAVA_LONG_UNALIGNED, at + 16, total);
            m.set(ValueLayout.JAVA_INT_UNALIGNED, at + 24, rkey);
            m.set(ValueLayout.JAVA_INT_UNALIGNED, at + 28, seq & SEQ_MASK);
            post(wr.wrId(0).opcode(Opcode.SEND).local(ctrl, at, CTRL_BYTES).signaled(true)
                    .inline(CTRL_BYTES <= inlineBytes), null, 0, -1);
            r.advertised += bytes;
            if (r.advertised == total) {
                toAdvertise.poll();
            }
        }
    }

    /** Writes the posted sends, in order: eager ones into the peer's eager slots, others where it advertised. */
    private void write() {
        SendReq s;
        while ((s = posting.peek()) != null && wqeCount < SEND_WQES) {
            long size = s.src.byteSize();
            if (size <= eagerBytes) {
                if (!writeEager(s)) {
                    return;
                }
                posting.poll();
                continue;
            }
            if (inCount == 0) {
                return;
            }
            if (s.offset == 0 && inWritten == 0) {
                if (inTotal[inHead] != size) {
                    throw new CollectiveException("rank " + self + " sends " + size + " bytes but rank " + peer
                            + " expects "
                            + inTotal[inHead] + " (mismatched counts or types across ranks)");
                }
                s.region = domain.registered(s.src);
            }
            long left = inBytes[inHead] - inWritten;
            long bytes;
            int chunk = -1;
            if (s.region != null) {
                bytes = left;
                wr.local(s.region, s.src.address() - s.region.address() + s.offset, bytes);
            } else {
                chunk = freeChunk(sendChunkBusy);
                if (chunk < 0) {
                    return;
                }
                sendChunkBusy[chunk] = true;
                bytes = Math.min(left, CHUNK_BYTES);
                long at = (long) (CHUNKS + chunk) * CHUNK_BYTES;
                MemorySegment.copy(s.src, s.offset, staging.segment(), at, bytes);
                wr.local(staging, at, bytes);
            }
            boolean last = inWritten + bytes == inBytes[inHead];
            wr.wrId(0).remote(inAddress[inHead] + inWritten, inRkey[inHead]).signaled(true).inline(false);
            if (last) {
                wr.opcode(Opcode.RDMA_WRITE_WITH_IMM).immediate(inSeq[inHead]);
            } else {
                wr.opcode(Opcode.RDMA_WRITE);
            }
            post(wr, s, bytes, chunk);
            s.offset += bytes;
            inWritten += bytes;
            if (last) {
                inHead = (inHead + 1) % ADVERTS;
                inCount--;
                inWritten = 0;
            }
            if (s.offset == size) {
                posting.poll();
            }
        }
    }

    /**
     * Writes {@code s} into the peer's next eager slot, from its own buffer when that is registered, else
     * through this side's send slot of the same index; inline (and complete at once) when it is small enough.
     * False when the peer has no slot free (no credit).
     */
    private boolean writeEager(SendReq s) {
        long peerTook = (long) LONG.getVolatile(eager.segment(), creditInAt);
        int slot = (int) (eagerSent % EAGER_SLOTS);
        if (eagerSent - peerTook >= EAGER_SLOTS) {
            awaitingCredit = true;
            askForCredit();
            return false;
        }
        awaitingCredit = false;
        if (eagerSlotBusy[slot]) {
            return false;
        }
        int bytes = (int) s.src.byteSize();
        if (bytes <= footedBytes) {
            writeFooted(s, slot, bytes);
            return true;
        }
        boolean inline = bytes <= inlineBytes;
        int chunk = -1;
        if (inline && s.src.isNative()) {
            wr.local(s.src.address(), bytes, 0); // copied into the work request: no registration needed
        } else if (!inline && (s.region = domain.registered(s.src)) != null) {
            wr.local(s.region, s.src.address() - s.region.address(), bytes); // from the sender's buffer, as above
        } else {
            long at = (long) (EAGER_SLOTS + slot) * slotBytes;
            MemorySegment.copy(s.src, 0, eager.segment(), at, bytes);
            wr.local(eager, at, bytes);
            if (!inline) {
                eagerSlotBusy[slot] = true;
                chunk = EAGER_WQE + slot;
            }
        }
        wr.wrId(0).opcode(Opcode.RDMA_WRITE_WITH_IMM).immediate(EAGER_FLAG | bytes)
                .remote(peerSlots + (long) slot * peerSlotBytes, peerEagerRkey).signaled(true).inline(inline);
        // An inline send's bytes are in the work request once posted: the sender's buffer is free at once.
        post(wr, inline ? null : s, bytes, chunk);
        s.offset = bytes;
        eagerSent++;
        if (inline) {
            s.markDone();
        }
        return true;
    }

    /**
     * Writes a small eager message and its footer (sequence number and length) in one inline write that ends at the
     * peer's slot's end, so that the peer finds it by reading the footer's word ({@link #pollFooters}), as well as by
     * the completion its immediate data makes. The message goes through this side's send slot of the same index,
     * which the inline post copies from, so the slot is free again at once.
     */
    private void writeFooted(SendReq s, int slot, int bytes) {
        int padded = (bytes + 7) & ~7;
        long at = (long) (EAGER_SLOTS + slot) * slotBytes;
        MemorySegment m = eager.segment();
        MemorySegment.copy(s.src, 0, m, at, bytes);
        m.set(ValueLayout.JAVA_LONG_UNALIGNED, at + padded, footer(eagerSent + 1, bytes));
        long remoteStart = footedStart(peerSlots + (long) (slot + 1) * peerSlotBytes, bytes);
        wr.wrId(0).opcode(Opcode.RDMA_WRITE_WITH_IMM).immediate(EAGER_FLAG | FOOTED_FLAG | bytes)
                .local(eager, at, padded + FOOTER_BYTES).remote(remoteStart, peerEagerRkey)
                .signaled(true).inline(true);
        post(wr, null, bytes, -1);
        s.offset = bytes;
        eagerSent++;
        s.markDone();
    }

    /** The footer of the {@code seq}-th eager message (from 1), of {@code bytes}. */
    private static long footer(long seq, int bytes) {
        return (seq << 32) | FOOTER_MARK | bytes;
    }

    /**
     * Where a message of {@code bytes} with a footer starts in a slot that ends at {@code slotEnd} (the writer's
     * address in the peer's slot, or the reader's offset in its own): the message, padded to 8 bytes, then the footer.
     */
    private static long footedStart(long slotEnd, int bytes) {
        return slotEnd - FOOTER_BYTES - ((bytes + 7) & ~7);
    }

    /**
     * Reads the footer's word of the next eager slot: whether the peer wrote its next message there with a footer.
     * The adapter writes a message in the order of its bytes, the footer last (one packet, written by the receiving
     * adapter front to back, the rule Open MPI's eager RDMA and MVAPICH's RDMA fast path also rest on), so a footer
     * that carries the expected sequence number follows the whole message. One read per progress call; the
     * completion the same write makes is counted off when polled.
     */
    private void pollFooters() {
        if (peerFootedBytes == 0) {
            return;
        }
        while (eagerArrived - eagerTaken < EAGER_SLOTS) {
            long word = (long) LONG.getAcquire(eager.segment(), footerAt((int) (eagerArrived % EAGER_SLOTS)));
            if ((int) (word >>> 32) != (int) (eagerArrived + 1) || (word & FOOTER_MARK) == 0) {
                return;
            }
            footerSincePoll = true;
            eagerArrived((int) (word & LENGTH_MASK), true);
        }
    }

    private long footerAt(int slot) {
        return (long) (slot + 1) * slotBytes - FOOTER_BYTES;
    }

    /** The peer wrote an eager message of {@code bytes} into our next eager slot (ending in a footer when footed). */
    private void eagerArrived(int bytes, boolean footed) {
        if (eagerArrived - eagerTaken == EAGER_SLOTS || bytes > eagerBytes || (footed && bytes > peerFootedBytes)) {
            throw new CollectiveException("rank " + self + ": protocol error on the RDMA link to rank " + peer
                    + ": an eager message of " + bytes + " bytes" + (footed ? " with a footer" : "") + " with "
                    + (eagerArrived - eagerTaken) + " of " + EAGER_SLOTS + " slots full");
        }
        int slot = (int) (eagerArrived % EAGER_SLOTS);
        eagerLength[slot] = bytes;
        eagerFooted[slot] = footed;
        eagerArrived++;
        deliverEager();
    }

    /**
     * Completes waiting receives from the eager slots not taken yet, oldest first. Sends stay in order, so
     * when an eager message arrives every earlier message has completed its receive: the oldest waiting
     * receive is this message's (one that is too large for it is reported as mismatched). A message found by
     * its footer may be ahead of the completion that ends an earlier, advertised message (written before it, so
     * that completion is in the queue already): before an eager message meets a receive too large for one, the
     * queue is polled.
     */
    private void deliverEager() {
        RecvReq r;
        while (eagerArrived > eagerTaken && (r = awaiting.peek()) != null) {
            if (footerSincePoll && r.dst.byteSize() > eagerBytes) {
                pollCompletions(); // may complete r, and deliver eager messages itself
                continue;
            }
            takeEager(awaiting.poll());
        }
    }

    /** Completes {@code r} from the oldest eager slot not taken yet. */
    private void takeEager(RecvReq r) {
        int slot = (int) (eagerTaken % EAGER_SLOTS);
        int bytes = eagerLength[slot];
        if (bytes != r.dst.byteSize()) {
            throw new CollectiveException("rank " + peer + " sent " + bytes + " bytes but rank " + self
                    + " expects " + r.dst.byteSize() + " (mismatched counts or types across ranks)");
        }
        boolean footed = eagerFooted[slot];
        long from = footed ? footedStart((long) (slot + 1) * slotBytes, bytes) : (long) slot * slotBytes;
        if (r.op == null) {
            MemorySegment.copy(eager.segment(), from, r.dst, 0, bytes);
        } else {
            r.fold(0, eager.segment(), from, bytes / r.type.byteSize());
        }
        if (footed) {
            // Before the slot's credit goes back: the footer of a later message without one must not match.
            eager.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, footerAt(slot), 0L);
        }
        eagerTaken++;
        r.offset = bytes;
        r.markDone();
    }

    /**
     * Out of credit: writes the sent count into the peer's ask word, once per count, so that the peer
     * gives back what it has taken without waiting for a full batch (a sender never waits on slots the
     * receiver has emptied, which a receiver that waits for this sender's later messages could not fill).
     */
    private void askForCredit() {
        if (askedAt == eagerSent) {
            return;
        }
        writeWord(ASK_WORD, eagerSent);
        askedAt = eagerSent;
    }

    /**
     * Tells the peer how many eager slots this side has taken: every CREDIT_BATCH slots (one write per
     * batch, not per message), and at once when the peer has asked since the last answer.
     */
    private void returnCredits() {
        // A slot whose completion is not polled yet still holds a receive work request of the queue: not given back.
        long taken = Math.min(eagerTaken, eagerCompleted);
        long owed = taken - eagerReturned;
        if (owed == 0 || wqeCount == SEND_WQES) {
            return;
        }
        if (owed < CREDIT_BATCH) {
            long asked = (long) LONG.getVolatile(eager.segment(), creditInAt + ASK_WORD);
            if (asked == askAnswered) {
                return;
            }
            askAnswered = asked;
        }
        writeWord(0, taken);
        eagerReturned = taken;
    }

    /**
     * RDMA-writes {@code value} into the peer's word at {@code offset} from its credit word (the credit or
     * the ask word), from this side's word at the same offset. One local word per kind, written again each
     * time: both counts only grow, so a write the adapter reads late sends a larger count, still true.
     */
    private void writeWord(int offset, long value) {
        LONG.setVolatile(eager.segment(), creditOutAt + offset, value);
        post(wr.wrId(0).opcode(Opcode.RDMA_WRITE).local(eager, creditOutAt + offset, 8)
                .remote(peerCreditWord + offset, peerEagerRkey).signaled(true).inline(8 <= inlineBytes), null, 0, -1);
    }

    private void post(SendRequest request, SendReq owner, long bytes, int chunk) {
        int slot = (wqeHead + wqeCount) % SEND_WQES;
        wqeSend[slot] = owner;
        wqeBytes[slot] = bytes;
        wqeChunk[slot] = chunk;
        wqeCount++;
        if (owner != null) {
            ownedWqes++;
        }
        qp.postSend(request);
    }

    private void postReceive(int slot) {
        qp.postReceive(rwr.wrId(RECV_TAG | slot).local(ctrl, (long) slot * CTRL_BYTES, CTRL_BYTES));
    }

    private static int freeChunk(boolean[] busy) {
        for (int i = 0; i < busy.length; i++) {
            if (!busy[i]) {
                return i;
            }
        }
        return -1;
    }

    /** The idle TCP connection: end of stream means the peer is gone; a negative header carries a blame. */
    @Override
    protected void doCheckPeer() {
        int got;
        try {
            got = channel.read(liveness);
        } catch (IOException e) {
            throw new PeerFailedException(peer, "rank " + self + ": the connection to rank " + peer
                    + " failed (peer died?): " + e.getMessage(), e);
        }
        if (!liveness.hasRemaining()) {
            long h = liveness.getLong(0);
            liveness.clear();
            int failed = BlameHeader.blamedRank(h);
            if (failed >= 0) {
                throw peerGaveUp(self, failed, null);
            }
        }
        if (got < 0) {
            throw new PeerFailedException(peer, "rank " + self + ": rank " + peer
                    + " closed its connection (died or closed its communicator)", null);
        }
    }

    @Override
    protected void signalClose() {
        int failed = blame();
        if (failed >= 0) {
            try {
                ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0,
                        BlameHeader.encode(failed));
                channel.write(b);
            } catch (IOException | RuntimeException ignored) {
                // the connection is gone already
            }
        }
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing
        }
    }

    @Override
    public WakeSignal wakeSignal() {
        return domain.wakeSignal;
    }

    /** Asks for an event on the domain's completion channel at this link's next completion (none once released). */
    void requestNotification() {
        pollRequested = true;
        cq.requestNotification();
    }

    /** Whether a send waits for eager credit, which comes as a plain RDMA write that signals no completion. */
    boolean awaitsCredit() {
        return awaitingCredit;
    }

    @Override
    protected void release() {
        domain.wakeSignal.remove(this);
        try {
            qp.close();
            cq.close();
            ctrl.close();
            staging.close();
            eager.close();
        } finally {
            arena.close();
            domain.release();
        }
    }

    private static final class SendReq extends Request.Send {
        long completed;
        MemoryRegion region;

        SendReq(VerbsLink link, MemorySegment src) {
            super(link, src);
        }

        @Override
        protected void release() {
            super.release();
            region = null;
            completed = 0;
        }

        void markDone() {
            complete();
        }
    }

    private static final class RecvReq extends Request.Receive {
        long advertised;
        MemoryRegion region;

        RecvReq(VerbsLink link, MemorySegment dst, MemorySegment with, double withScale, double incomingScale,
                DataType type, ReduceOp op) {
            super(link, dst, with, withScale, incomingScale, type, op);
        }

        @Override
        protected void release() {
            super.release();
            region = null;
            advertised = 0;
        }

        void markDone() {
            complete();
        }
    }
}
