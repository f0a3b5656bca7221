package dev.panamax.collectives.internal.transport.tcp;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.internal.transport.BlameHeader;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.Request;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * The TCP transport's link: non-blocking sockets to the peer. On each socket a message (or its part)
 * is an 8-byte header, the whole message's length, followed by the payload, written from and read
 * into the {@link MemorySegment}s themselves through {@link MemorySegment#asByteBuffer()} views (no
 * byte[] in between). A reducing receive reads into a small native staging buffer and folds it into
 * the destination piece by piece.
 *
 * <p>The first socket carries messages under {@link #ONE_WAY_MIN_BYTES} both ways. Larger messages go
 * over one-way sockets ({@code PANAMAX_TCP_DATA_CONNECTIONS} per direction): the first socket then
 * carries only their header, in order with the small messages, so both ranks check every length on
 * one stream. A socket that carries large messages both ways at once was measured 1.1-1.4x slower on
 * loopback: while a rank writes a large message, the peer's data arriving on the same socket waits for
 * the socket's lock, so its acknowledgements go out late, and the connection reorders and retransmits
 * (docs/results/performance.md, "TCP: one-way connections for large messages"). With several
 * one-way sockets per direction, messages of at least twice {@link #STRIPE_PART_BYTES} are split into
 * up to one part per socket; both sides compute the same split from the length (which must agree), so
 * each socket's stream stays in FIFO order. That is for networks that cap each connection's rate (as
 * NCCL's {@code NCCL_NSOCKS_PERTHREAD} is). With no one-way sockets every message goes over the first.
 */
public final class TcpLink extends Link {
    /**
     * A message is split into at most one part per socket and at most one per this many bytes (the last part may be
     * shorter by the rounding of the others); messages under twice this stay whole on one socket.
     */
    static final long STRIPE_PART_BYTES = 256 * 1024;
    /** Messages of at least this many bytes go over the one-way sockets, when the link has them. */
    static final long ONE_WAY_MIN_BYTES = 128 * 1024;
    /** Parts start at multiples of this: a multiple of every element size, so a reduction folds whole elements. */
    private static final long STRIPE_ALIGN_BYTES = 4096;
    /** Small enough that a piece is still in cache when folded, and that folding overlaps the next piece's arrival. */
    private static final int STAGING_BYTES = 32 * 1024;
    /** ByteBuffer views are int-indexed: large segments are moved in windows. */
    private static final long WINDOW_BYTES = 1L << 30;
    private final int self;
    /** Every socket: the shared one, then the one-way ones from the lower rank, then those from the higher. */
    private final Lane[] lanes;
    /** The one-way sockets this rank sends its large messages on, and those it receives the peer's on. */
    private final Lane[] outLanes;
    private final Lane[] inLanes;
    private final Arena arena = Arena.ofShared();

    /**
     * @param channels connected sockets to {@code peer}, in the order the peer has them: the shared one, then
     *        the same number of one-way sockets for each direction (lower rank to higher first)
     */
    public TcpLink(int self, int peer, SocketChannel[] channels) throws IOException {
        super(peer);
        if (channels.length % 2 != 1) {
            throw new IllegalArgumentException("a TCP link takes one shared socket and the same number of one-way "
                    + "sockets each way, an odd number in all, not " + channels.length);
        }
        this.self = self;
        this.lanes = new Lane[channels.length];
        for (int i = 0; i < channels.length; i++) {
            channels[i].configureBlocking(false);
            lanes[i] = new Lane(channels[i]);
        }
        int perDirection = oneWayPerDirection(channels.length);
        Lane[] up = Arrays.copyOfRange(lanes, 1, 1 + perDirection);
        Lane[] down = Arrays.copyOfRange(lanes, 1 + perDirection, lanes.length);
        this.outLanes = self < peer ? up : down;
        this.inLanes = self < peer ? down : up;
    }

    /** How many sockets a pair uses for {@code perDirection} one-way sockets each way: one more, shared. */
    static int socketsFor(int perDirection) {
        return 1 + 2 * perDirection;
    }

    static int oneWayPerDirection(int sockets) {
        return (sockets - 1) / 2;
    }

    @Override
    public String kind() {
        return "tcp";
    }

    /** How many sockets join this link's two ranks. */
    int sockets() {
        return lanes.length;
    }

    /** Whether a message of {@code byteSize} bytes goes over the one-way sockets. */
    boolean goesOneWay(long byteSize) {
        return outLanes.length > 0 && byteSize >= ONE_WAY_MIN_BYTES;
    }

    /** How many parts a message of {@code byteSize} bytes is split into over {@code sockets} sockets. */
    static int parts(long byteSize, int sockets) {
        return (int) Math.max(1, Math.min(sockets, byteSize / STRIPE_PART_BYTES));
    }

    /** Where part {@code j} of {@code parts} starts (part {@code parts} "starts" at the end). */
    static long partStart(long byteSize, int parts, int j) {
        if (j == parts) {
            return byteSize;
        }
        long each = (byteSize + parts - 1) / parts;
        each = (each + STRIPE_ALIGN_BYTES - 1) / STRIPE_ALIGN_BYTES * STRIPE_ALIGN_BYTES;
        return Math.min(byteSize, j * each);
    }

    @Override
    public Request send(MemorySegment src) {
        long bytes = src.byteSize();
        if (!goesOneWay(bytes)) {
            SendReq r = new SendReq(this, src, 1);
            lanes[0].sends.add(new SendPart(r, 0, bytes));
            return r;
        }
        int parts = parts(bytes, outLanes.length);
        SendReq r = new SendReq(this, src, parts + 1);
        lanes[0].sends.add(new SendPart(r, 0, 0)); // the length alone, in order with the small messages
        for (int j = 0; j < parts; j++) {
            outLanes[j].sends.add(new SendPart(r, partStart(bytes, parts, j), partStart(bytes, parts, j + 1)));
        }
        return r;
    }

    @Override
    public Request recv(MemorySegment dst, MemorySegment with, double withScale, double incomingScale,
            DataType type, ReduceOp op) {
        long bytes = dst.byteSize();
        if (!goesOneWay(bytes)) {
            RecvReq r = new RecvReq(this, dst, with, withScale, incomingScale, type, op, 1);
            lanes[0].recvs.add(new RecvPart(r, 0, bytes));
            return r;
        }
        int parts = parts(bytes, inLanes.length);
        RecvReq r = new RecvReq(this, dst, with, withScale, incomingScale, type, op, parts + 1);
        lanes[0].recvs.add(new RecvPart(r, 0, 0));
        for (int j = 0; j < parts; j++) {
            inLanes[j].recvs.add(new RecvPart(r, partStart(bytes, parts, j), partStart(bytes, parts, j + 1)));
        }
        return r;
    }

    @Override
    protected void doProgress() {
        try {
            for (Lane lane : lanes) {
                progressSends(lane);
            }
            for (Lane lane : lanes) {
                progressRecvs(lane);
            }
        } catch (IOException e) {
            int failed = passedBlame();
            if (failed >= 0) {
                throw peerGaveUp(self, failed, e);
            }
            throw new PeerFailedException(peer, "rank " + self + ": TCP connection to rank " + peer
                    + " failed (peer died?): " + e.getMessage(), e);
        }
    }

    /**
     * After a failed write: the peer may have passed on a blame before it closed (a reset makes our
     * writes fail first). Reads the next header on each socket that is between messages; the
     * blamed rank, or -1.
     */
    private int passedBlame() {
        for (Lane lane : lanes) {
            RecvPart p = lane.recvs.peek();
            if (p != null && p.headerDone) {
                continue;
            }
            try {
                if (lane.recvHeader.hasRemaining()) {
                    lane.channel.read(lane.recvHeader);
                }
            } catch (IOException | RuntimeException ignored) {
                // nothing more to read
            }
            int failed = lane.recvHeader.hasRemaining() ? -1 : BlameHeader.blamedRank(lane.recvHeader.getLong(0));
            if (failed >= 0) {
                return failed;
            }
        }
        return -1;
    }

    private static void progressSends(Lane lane) throws IOException {
        SendPart p;
        while ((p = lane.sends.peek()) != null) {
            MemorySegment src = p.req.src;
            if (!p.headerDone) {
                if (!p.headerStarted) {
                    lane.sendHeader.clear();
                    lane.sendHeader.putLong(0, src.byteSize());
                    p.headerStarted = true;
                    if (p.offset < p.end) {
                        p.window = window(src, p.offset, p.end);
                    }
                }
                if (p.window != null) {
                    // Header and payload in one writev: one segment, one wake-up for a small message.
                    int before = p.window.position();
                    lane.pair[0] = lane.sendHeader;
                    lane.pair[1] = p.window;
                    lane.channel.write(lane.pair);
                    p.moved(p.window.position() - before);
                } else {
                    lane.channel.write(lane.sendHeader);
                }
                if (lane.sendHeader.hasRemaining()) {
                    return;
                }
                lane.sendHeader.clear();
                p.headerDone = true;
            }
            while (p.offset < p.end) {
                if (p.window == null || !p.window.hasRemaining()) {
                    p.window = window(src, p.offset, p.end);
                }
                int before = p.window.position();
                lane.channel.write(p.window);
                int wrote = p.window.position() - before;
                p.moved(wrote);
                if (wrote == 0) {
                    return;
                }
            }
            lane.sends.poll();
            if (--p.req.partsLeft == 0) {
                p.req.complete();
            }
        }
    }

    private void progressRecvs(Lane lane) throws IOException {
        RecvPart p;
        while ((p = lane.recvs.peek()) != null) {
            RecvReq r = p.req;
            if (!p.headerDone) {
                long got = readHeaderAndPayload(lane, p);
                if (got < 0) {
                    throw eof();
                }
                if (lane.recvHeader.hasRemaining()) {
                    return;
                }
                long bytes = lane.recvHeader.getLong(0);
                lane.recvHeader.clear();
                p.headerDone = true;
                int failed = BlameHeader.blamedRank(bytes);
                if (failed >= 0) {
                    throw peerGaveUp(self, failed, null);
                }
                if (bytes != r.dst.byteSize()) {
                    throw new CollectiveException("rank " + peer + " sent " + bytes + " bytes but rank " + self
                            + " expected " + r.dst.byteSize() + " (mismatched counts or types across ranks)");
                }
            }
            while (p.offset < p.end) {
                if (r.op == null) {
                    if (p.window == null || !p.window.hasRemaining()) {
                        p.window = window(r.dst, p.offset, p.end);
                    }
                    int before = p.window.position();
                    if (read(lane, p.window) < 0) {
                        throw eof();
                    }
                    int got = p.window.position() - before;
                    p.moved(got);
                    if (got == 0) {
                        return;
                    }
                } else {
                    // Fill a whole-element piece of staging, then fold it in.
                    if (p.window == null) {
                        p.window = lane.stagingPiece(arena, p.end - p.offset);
                    }
                    if (read(lane, p.window) < 0) {
                        throw eof();
                    }
                    if (p.window.hasRemaining()) {
                        return;
                    }
                    int piece = p.window.limit();
                    r.fold(p.offset, lane.staging, 0, piece / r.type.byteSize());
                    p.moved(piece);
                    p.window = null;
                }
            }
            lane.recvs.poll();
            if (--r.partsLeft == 0) {
                r.complete();
            }
        }
    }

    /** Reads the header together with the first payload bytes (readv): one system call for a small message. */
    private long readHeaderAndPayload(Lane lane, RecvPart p) throws IOException {
        if (p.offset == p.end) {
            return read(lane, lane.recvHeader);
        }
        RecvReq r = p.req;
        if (p.window == null) {
            p.window = r.op == null ? window(r.dst, p.offset, p.end) : lane.stagingPiece(arena, p.end - p.offset);
        }
        int before = p.window.position();
        lane.pair[0] = lane.recvHeader;
        lane.pair[1] = p.window;
        long got = lane.channel.read(lane.pair);
        if (r.op == null) {
            p.moved(p.window.position() - before);
        }
        return got;
    }

    private static ByteBuffer window(MemorySegment segment, long from, long end) {
        return segment.asSlice(from, Math.min(WINDOW_BYTES, end - from)).asByteBuffer();
    }

    private static int read(Lane lane, ByteBuffer b) throws IOException {
        return b.hasRemaining() ? lane.channel.read(b) : 0;
    }

    private PeerFailedException eof() {
        return new PeerFailedException(peer, "rank " + self + ": rank " + peer
                + " closed its TCP connection (died or closed its communicator)", null);
    }

    @Override
    protected void doCheckPeer() {
        for (Lane lane : lanes) {
            if (!lane.channel.isOpen()) {
                throw new PeerFailedException(peer, "rank " + self + ": TCP connection to rank " + peer
                        + " is closed", null);
            }
            if (lane.recvs.isEmpty() && lane.recvHeader.hasRemaining()) {
                // Nothing posted: read ahead into the next header, which shows a closed connection (and
                // a passed-on blame) now; the next receive goes on from the bytes read here.
                int got;
                try {
                    got = lane.channel.read(lane.recvHeader);
                } catch (IOException e) {
                    throw new PeerFailedException(peer, "rank " + self + ": TCP connection to rank " + peer
                            + " failed (peer died?): " + e.getMessage(), e);
                }
                if (got < 0) {
                    throw eof();
                }
                int failed = lane.recvHeader.hasRemaining() ? -1 : BlameHeader.blamedRank(lane.recvHeader.getLong(0));
                if (failed >= 0) {
                    throw peerGaveUp(self, failed, null);
                }
            }
        }
    }

    /** Closes the sockets (the peer reads end of stream); NIO makes this safe beside a read or write on another thread.
     * */
    @Override
    protected void signalClose() {
        int failed = blame();
        for (Lane lane : lanes) {
            if (failed >= 0) {
                passBlame(lane, failed);
            }
            try {
                lane.channel.close();
            } catch (IOException ignored) {
                // closing
            }
        }
    }

    @Override
    protected void release() {
        arena.close();
    }

    /**
     * Best effort: at a message boundary, a header of length {@code -(2 + failed)} tells the peer
     * that this rank gave up because rank {@code failed} did. Only the thread that holds the
     * communicator's lock closes with a blame, so no send runs beside this write.
     */
    private static void passBlame(Lane lane, int failed) {
        SendPart p = lane.sends.peek();
        if (p != null && p.headerStarted) {
            return; // mid-message: the peer will just see the connection close
        }
        try {
            lane.sendHeader.clear();
            lane.sendHeader.putLong(0, BlameHeader.encode(failed));
            lane.channel.write(lane.sendHeader);
        } catch (IOException | RuntimeException ignored) {
            // the connection is gone already
        }
    }

    /** One socket and the parts queued on it, in FIFO order per direction. */
    private static final class Lane {
        final SocketChannel channel;
        final ByteBuffer sendHeader = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
        final ByteBuffer recvHeader = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
        final ByteBuffer[] pair = new ByteBuffer[2];
        final ArrayDeque<SendPart> sends = new ArrayDeque<>();
        final ArrayDeque<RecvPart> recvs = new ArrayDeque<>();
        /** Where a reducing receive lands before it is folded in; allocated at the first one. */
        MemorySegment staging;
        ByteBuffer stagingBuffer;

        Lane(SocketChannel channel) {
            this.channel = channel;
        }

        /** The staging buffer, cleared and limited to the next piece of a part with {@code left} bytes to go. */
        ByteBuffer stagingPiece(Arena arena, long left) {
            if (staging == null) {
                staging = arena.allocate(STAGING_BYTES, 64);
                stagingBuffer = staging.asByteBuffer();
            }
            return stagingBuffer.clear().limit((int) Math.min(STAGING_BYTES, left));
        }
    }

    private static final class SendReq extends Request.Send {
        int partsLeft;

        SendReq(TcpLink link, MemorySegment src, int parts) {
            super(link, src);
            this.partsLeft = parts;
        }
    }

    private static final class RecvReq extends Request.Receive {
        int partsLeft;

        RecvReq(TcpLink link, MemorySegment dst, MemorySegment with, double withScale, double incomingScale,
                DataType type, ReduceOp op, int parts) {
            super(link, dst, with, withScale, incomingScale, type, op);
            this.partsLeft = parts;
        }
    }

    /** Bytes {@code [offset, end)} of a message, on one socket. */
    private abstract static class Part {
        final long end;
        long offset;
        boolean headerDone;
        ByteBuffer window;

        Part(long start, long end) {
            this.offset = start;
            this.end = end;
        }

        /** Counts bytes moved here and on the request, whose offset a timeout's message reports. */
        final void moved(long bytes) {
            offset += bytes;
            countOnRequest(bytes);
        }

        abstract void countOnRequest(long bytes);
    }

    private static final class SendPart extends Part {
        final SendReq req;
        boolean headerStarted;

        SendPart(SendReq req, long start, long end) {
            super(start, end);
            this.req = req;
        }

        @Override
        void countOnRequest(long bytes) {
            req.offset += bytes;
        }
    }

    private static final class RecvPart extends Part {
        final RecvReq req;

        RecvPart(RecvReq req, long start, long end) {
            super(start, end);
            this.req = req;
        }

        @Override
        void countOnRequest(long bytes) {
            req.offset += bytes;
        }
    }
}
