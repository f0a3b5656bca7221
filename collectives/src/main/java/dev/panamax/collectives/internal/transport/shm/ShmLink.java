package dev.panamax.collectives.internal.transport.shm;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.Request;
import dev.panamax.collectives.internal.transport.SpareRequests;
import dev.panamax.collectives.internal.transport.SharedWindow;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.SharedMemory;
import dev.panamax.memory.concurrent.Doorbell;
import dev.panamax.memory.concurrent.WakeSignal;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The shared-memory transport to a peer process of this host.
 *
 * <p>Every rank owns an inbox (one memfd region) with one channel block per sender. A channel is a
 * single-producer single-consumer ring of {@link #SLOTS} slots: the sender fills a slot and
 * publishes it by a release-store of the slot's sequence number in its descriptor, which the
 * receiver polls (so a small message costs one cache line: its payload rides in the descriptor);
 * the receiver consumes it and release-stores {@code tail}, which the sender reads only when the
 * ring is full. A slot carries either a piece of the message inline ({@link #SLOT_BYTES} at most:
 * the sender copies in while the receiver copies or reduces out, pipelined), or, when the send
 * buffer came from the communicator's shared-memory allocator, a reference to it: the receiver
 * maps the sender's region and reads the data where it lies (zero copies through staging), and
 * the send completes when the receiver has consumed it.
 *
 * <p>The inbox starts with a header holding the owner's {@link Doorbell}: a rank whose wait found nothing
 * after spinning sleeps on it, and every write into a channel (a published slot, a consumed one) rings the
 * other side's doorbell after the store, so the write itself wakes the waiter. Beside it, in a cache line of its own,
 * the CPU the owner's waiting thread runs on while a wait lasts ({@link #shareCpu}), which a peer reads to tell
 * whether the two take turns on one CPU. Then the owner's {@link SharedWindow}, which the peers read for one-shot
 * reductions.
 */
public final class ShmLink extends Link {
    static final int SLOTS = 8;
    static final long SLOT_BYTES = 256 * 1024;
    /** Messages at least this long go by reference when they lie in shared memory. */
    static final long BY_REFERENCE_MIN_BYTES = 64 * 1024;

    private static final long TAIL = 64;
    private static final long SENDER_CLOSED = 128;
    private static final long RECEIVER_CLOSED = 192;
    /** Closed flag values: 1 closed; {@code CLOSED_BLAMING + r} closed because rank r failed. */
    private static final int CLOSED_BLAMING = 2;
    private static final long DESCRIPTORS = 256;
    private static final long DESCRIPTOR_BYTES = 64;
    private static final long DATA = 4096;
    public static final long BLOCK_BYTES = DATA + SLOTS * SLOT_BYTES;
    /** The inbox header before the channel blocks: the owner's doorbell, its CPU and its shared window. */
    private static final long INBOX_HEADER_BYTES = 16384;
    private static final long DOORBELL = 0;
    /** The owner's CPU + 1 while a wait of its thread lasts (0: none), in its own cache line (see shareCpu). */
    private static final long OWNER_CPU = 64;
    /** The owner's {@link SharedWindow}. */
    private static final long WINDOW = 4096;

    // descriptor fields (one cache line per slot)
    private static final long D_SEQUENCE = 0;     // slot's sequence number + 1, written last
    private static final long D_KIND = 8;
    private static final long D_MESSAGE_BYTES = 16;
    private static final long D_PIECE_BYTES = 24;
    private static final long D_REGION_ID = 32;
    private static final long D_FD = 40;
    private static final long D_REGION_BYTES = 48;
    private static final long D_OFFSET = 56;
    /** Small pieces travel in the descriptor itself, over the (then unused) reference fields. */
    private static final long D_PAYLOAD = 32;
    static final long DESCRIPTOR_PAYLOAD_BYTES = 32;
    private static final long KIND_INLINE = 1;
    private static final long KIND_REFERENCE = 2;
    private static final long KIND_IN_DESCRIPTOR = 3;

    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final ValueLayout.OfLong L = ValueLayout.JAVA_LONG;

    private final int self;
    private final long peerPid;
    /** Channel from the peer to us: block {@code peer} of our inbox. */
    private final MemorySegment in;
    /** Channel from us to the peer: block {@code self} of the peer's inbox. */
    private final MemorySegment out;
    private final SharedMemory.Region peerInbox;
    /** The doorbell of our inbox, shared by all our shm links: we sleep on it. */
    private final Doorbell ownDoorbell;
    private final MemorySegment ownInbox;
    /** The doorbell of the peer's inbox: rung after each write the peer may be waiting for. */
    private final Doorbell peerDoorbell;
    private final ShmAllocator allocator;
    private final MemorySegment ownWindow;
    private final MemorySegment peerWindow;
    private final ArrayDeque<SendReq> sends = new ArrayDeque<>();
    private final ArrayDeque<SendReq> awaitingConsumption = new ArrayDeque<>();
    private final ArrayDeque<Request.Receive> recvs = new ArrayDeque<>();
    private final PeerRegions peerRegions = new PeerRegions();
    /** Completed requests handed back ({@link #recycle}), posted again before any new one is made. */
    private final SpareRequests<SendReq, Request.Receive> spares =
            new SpareRequests<>(this, SendReq.class, Request.Receive.class);
    private long head;       // sequence number of the next slot we publish on out
    private long peerTail;   // last seen consumer position of out
    private long tail;       // next slot we consume on in

    /**
     * @param ownInbox     this rank's inbox ({@link #inboxBytes} long)
     * @param ownDoorbell  {@link #doorbellOf} the own inbox, one object for all the links of this rank
     * @param peerInbox    the peer's inbox, mapped here; the link closes it
     */
    public ShmLink(int self, int peer, long peerPid, MemorySegment ownInbox, Doorbell ownDoorbell,
            SharedMemory.Region peerInbox, ShmAllocator allocator) {
        super(peer);
        this.self = self;
        this.peerPid = peerPid;
        this.in = ownInbox.asSlice(INBOX_HEADER_BYTES + peer * BLOCK_BYTES, BLOCK_BYTES);
        this.out = peerInbox.segment().asSlice(INBOX_HEADER_BYTES + self * BLOCK_BYTES, BLOCK_BYTES);
        this.ownDoorbell = ownDoorbell;
        this.ownInbox = ownInbox;
        this.peerDoorbell = doorbellOf(peerInbox.segment());
        this.peerInbox = peerInbox;
        this.allocator = allocator;
        this.ownWindow = windowOf(ownInbox);
        this.peerWindow = windowOf(peerInbox.segment());
        // Channels are fresh (zeroed) memory: sequence numbers start at 0 on both sides.
    }

    /** The byte size of an inbox for a communicator of {@code size} ranks. */
    static long inboxBytes(int size) {
        return INBOX_HEADER_BYTES + size * BLOCK_BYTES;
    }

    /** The {@link SharedWindow} region of {@code inbox}. */
    static MemorySegment windowOf(MemorySegment inbox) {
        return inbox.asSlice(WINDOW, SharedWindow.BYTES);
    }

    /** A doorbell object over the doorbell word of {@code inbox}. */
    static Doorbell doorbellOf(MemorySegment inbox) {
        return new Doorbell(inbox.asSlice(DOORBELL, Doorbell.BYTES));
    }

    @Override
    public String kind() {
        return "shm";
    }

    @Override
    public WakeSignal wakeSignal() {
        return Doorbell.isSupported() ? ownDoorbell : null;
    }

    @Override
    public MemorySegment ownWindow() {
        return ownWindow;
    }

    @Override
    public MemorySegment peerWindow() {
        return peerWindow;
    }

    @Override
    public boolean wakePeer() {
        try {
            return peerDoorbell.ring();
        } catch (IllegalStateException closed) {
            // The link was closed and its mapping released (an abort): the wait that follows fails with the abort.
            return false;
        }
    }

    @Override
    public boolean isSharedMemory() {
        return true;
    }

    @Override
    public boolean canShareCpu() {
        return true;
    }

    @Override
    public void shareCpu(int cpu) {
        LONG.setOpaque(ownInbox, OWNER_CPU, (long) cpu + 1);
    }

    @Override
    public int peerCpu() {
        return (int) ((long) LONG.getOpaque(peerInbox.segment(), OWNER_CPU) - 1);
    }

    @Override
    public Request send(MemorySegment src) {
        SendReq r = spares.pollSend();
        if (r == null) {
            r = new SendReq(this, src);
        } else {
            r.reuse(src);
        }
        if (src.byteSize() >= BY_REFERENCE_MIN_BYTES) {
            r.located = allocator.locate(src);
        }
        sends.add(r);
        return r;
    }

    @Override
    public Request recv(MemorySegment dst, MemorySegment with, double withScale, double incomingScale,
            DataType type, ReduceOp op) {
        Request.Receive r = spares.pollReceive();
        if (r == null) {
            r = new Request.Receive(this, dst, with, withScale, incomingScale, type, op);
        } else {
            r.reuse(dst, with, withScale, incomingScale, type, op);
        }
        recvs.add(r);
        return r;
    }

    @Override
    public void recycle(Request r) {
        spares.keep(r);
    }

    @Override
    protected void doProgress() {
        // One ring (a full fence) per call that wrote: a peer asleep on it waits at most for our receives' folds.
        boolean published = progressSends();
        if (progressRecvs() | published) {
            peerDoorbell.ring();
        }
        SendReq c;
        if ((c = awaitingConsumption.peek()) != null
                && (peerTail = (long) LONG.getAcquire(out, TAIL)) > c.referenceSlot) {
            while ((c = awaitingConsumption.peek()) != null && peerTail > c.referenceSlot) {
                c.complete();
                awaitingConsumption.poll();
            }
        }
    }

    private boolean slotFree() {
        if (head - peerTail < SLOTS) {
            return true;
        }
        peerTail = (long) LONG.getAcquire(out, TAIL);
        return head - peerTail < SLOTS;
    }

    /** Publishes what the ring has room for; true when it published a slot. */
    private boolean progressSends() {
        boolean published = false;
        SendReq r;
        while ((r = sends.peek()) != null && slotFree()) {
            published = true;
            long slot = head % SLOTS;
            long d = DESCRIPTORS + slot * DESCRIPTOR_BYTES;
            long bytes = r.src.byteSize();
            out.set(L, d + D_MESSAGE_BYTES, bytes);
            if (r.located != null) {
                out.set(L, d + D_KIND, KIND_REFERENCE);
                out.set(L, d + D_PIECE_BYTES, bytes);
                out.set(L, d + D_REGION_ID, r.located.regionId());
                out.set(L, d + D_FD, r.located.handle().fd());
                out.set(L, d + D_REGION_BYTES, r.located.handle().byteSize());
                out.set(L, d + D_OFFSET, r.located.offset());
                r.referenceSlot = head;
                LONG.setRelease(out, d + D_SEQUENCE, ++head);
                sends.poll();
                awaitingConsumption.add(r);
                continue;
            }
            long piece = Math.min(SLOT_BYTES, bytes - r.offset);
            if (piece <= DESCRIPTOR_PAYLOAD_BYTES) {
                MemorySegment.copy(r.src, r.offset, out, d + D_PAYLOAD, piece);
                out.set(L, d + D_KIND, KIND_IN_DESCRIPTOR);
            } else {
                MemorySegment.copy(r.src, r.offset, out, DATA + slot * SLOT_BYTES, piece);
                out.set(L, d + D_KIND, KIND_INLINE);
            }
            out.set(L, d + D_PIECE_BYTES, piece);
            r.offset += piece;
            LONG.setRelease(out, d + D_SEQUENCE, ++head);
            if (r.offset == bytes) {
                r.complete();
                sends.poll();
            }
        }
        return published;
    }

    /** Consumes the slots that have arrived for the posted receives; true when it consumed one. */
    private boolean progressRecvs() {
        boolean consumed = false;
        Request.Receive r;
        while ((r = recvs.peek()) != null
                && (long) LONG.getAcquire(in, DESCRIPTORS + (tail % SLOTS) * DESCRIPTOR_BYTES + D_SEQUENCE) == tail
                + 1) {
            long slot = tail % SLOTS;
            long d = DESCRIPTORS + slot * DESCRIPTOR_BYTES;
            long expected = r.dst.byteSize();
            long messageBytes = in.get(L, d + D_MESSAGE_BYTES);
            if (messageBytes != expected) {
                throw new CollectiveException("rank " + peer + " sent " + messageBytes + " bytes but rank " + self
                        + " expected "
                        + expected + " (mismatched counts or types across ranks)");
            }
            long kind = in.get(L, d + D_KIND);
            long piece = in.get(L, d + D_PIECE_BYTES);
            // The piece lies at sourceOffset of source: no slice, which would allocate on every message.
            MemorySegment source;
            long sourceOffset;
            if (kind == KIND_REFERENCE) {
                source = peerRegions.map(in.get(L, d + D_REGION_ID), (int) in.get(L, d + D_FD), in.get(L,
                        d + D_REGION_BYTES));
                sourceOffset = in.get(L, d + D_OFFSET);
            } else {
                source = in;
                sourceOffset = kind == KIND_IN_DESCRIPTOR ? d + D_PAYLOAD : DATA + slot * SLOT_BYTES;
            }
            if (r.op == null) {
                MemorySegment.copy(source, sourceOffset, r.dst, r.offset, piece);
            } else if (piece > 0) {
                r.fold(r.offset, source, sourceOffset, piece / r.type.byteSize());
            }
            r.offset += piece;
            LONG.setRelease(in, TAIL, ++tail);
            consumed = true;
            if (r.offset == expected) {
                r.complete();
                recvs.poll();
            }
        }
        return consumed;
    }

    @Override
    protected void doCheckPeer() {
        int closed = in.get(ValueLayout.JAVA_INT, SENDER_CLOSED);
        if (closed == 0) {
            closed = out.get(ValueLayout.JAVA_INT, RECEIVER_CLOSED);
        }
        if (closed >= CLOSED_BLAMING) {
            throw peerGaveUp(self, closed - CLOSED_BLAMING, null);
        }
        if (closed != 0) {
            throw new PeerFailedException(peer, "rank " + self + ": peer rank " + peer + " (pid " + peerPid
                    + ") closed its communicator", null);
        }
        if (!isAlive(peerPid)) {
            throw new PeerFailedException(peer, "rank " + self + ": peer rank " + peer + " (pid " + peerPid + ") died",
                    null);
        }
    }

    /** Alive means the process exists and is not a zombie (a killed child not yet reaped). */
    static boolean isAlive(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            int close = stat.lastIndexOf(')');
            char state = close > 0 && close + 2 < stat.length() ? stat.charAt(close + 2) : '?';
            return state != 'Z' && state != 'X';
        } catch (NoSuchFileException e) {
            return false;
        } catch (IOException e) {
            return true;
        }
    }

    /** Sets the closed flags the peer's liveness check reads; plain stores into memory that stays mapped until release.
     * */
    @Override
    protected void signalClose() {
        try {
            int closed = blame() >= 0 ? CLOSED_BLAMING + blame() : 1;
            out.set(ValueLayout.JAVA_INT, SENDER_CLOSED, closed);
            in.set(ValueLayout.JAVA_INT, RECEIVER_CLOSED, closed);
            // Wake both sides' sleepers (an abort from another thread, a peer asleep on us): new objects, since the
            // progress thread may be ringing through the link's own at this moment.
            doorbellOf(peerInbox.segment()).ring();
            doorbellOf(ownInbox).ring();
        } catch (IllegalStateException ignored) {
            // our inbox is unmapped already (the process group closed first)
        }
    }

    @Override
    protected void release() {
        peerRegions.closeAll();
        peerInbox.close();
    }

    /** The peer's shared buffers this side has mapped, least recently used dropped past a bound. */
    private final class PeerRegions {
        private static final int MAX_MAPPED = 64;
        private final LinkedHashMap<Long, SharedMemory.Region> mapped = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, SharedMemory.Region> eldest) {
                if (size() > MAX_MAPPED) {
                    eldest.getValue().close();
                    return true;
                }
                return false;
            }
        };

        MemorySegment map(long regionId, int fd, long byteSize) {
            SharedMemory.Region r = mapped.get(regionId);
            if (r == null) {
                try {
                    r = SharedMemory.attach(new SharedMemory.Handle(peerPid, fd, byteSize));
                } catch (RuntimeException e) {
                    throw new PeerFailedException(peer,
                            "rank " + self + ": cannot map the buffer rank " + peer + " sent: " + e.getMessage(), e);
                }
                mapped.put(regionId, r);
            }
            return r.segment();
        }

        void closeAll() {
            for (SharedMemory.Region r : mapped.values()) {
                r.close();
            }
            mapped.clear();
        }
    }

    private static final class SendReq extends Request.Send {
        ShmAllocator.Located located;
        long referenceSlot;

        SendReq(ShmLink link, MemorySegment src) {
            super(link, src);
        }

        @Override
        protected void release() {
            super.release();
            located = null;
        }
    }
}
