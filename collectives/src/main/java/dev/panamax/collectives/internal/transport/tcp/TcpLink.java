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

/**
 * The TCP transport: one non-blocking socket per peer. Each message is an 8-byte length followed
 * by the payload, written from and read into the {@link MemorySegment}s themselves through
 * {@link MemorySegment#asByteBuffer()} views (no byte[] in between). A reducing receive reads into
 * a small native staging buffer and folds it into the destination piece by piece.
 */
public final class TcpLink extends Link {
    private static final int STAGING_BYTES = 256 * 1024;
    /** ByteBuffer views are int-indexed: large segments are moved in windows. */
    private static final long WINDOW_BYTES = 1L << 30;
    private final int self;
    private final SocketChannel channel;
    private final Arena arena = Arena.ofShared();
    private final ByteBuffer sendHeader = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
    private final ByteBuffer recvHeader = ByteBuffer.allocateDirect(8).order(ByteOrder.LITTLE_ENDIAN);
    private final MemorySegment staging;
    private final ByteBuffer stagingBuffer;
    private final ByteBuffer[] pair = new ByteBuffer[2];
    private final ArrayDeque<SendReq> sends = new ArrayDeque<>();
    private final ArrayDeque<RecvReq> recvs = new ArrayDeque<>();

    public TcpLink(int self, int peer, SocketChannel channel) throws IOException {
        super(peer);
        this.self = self;
        this.channel = channel;
        channel.configureBlocking(false);
        this.staging = arena.allocate(STAGING_BYTES, 64);
        this.stagingBuffer = staging.asByteBuffer();
    }

    @Override
    public String kind() {
        return "tcp";
    }

    @Override
    public Request send(MemorySegment src) {
        SendReq r = new SendReq(this, src);
        sends.add(r);
        return r;
    }

    @Override
    public Request recv(MemorySegment dst, MemorySegment with, double withScale, double incomingScale,
            DataType type, ReduceOp op) {
        RecvReq r = new RecvReq(this, dst, with, withScale, incomingScale, type, op);
        recvs.add(r);
        return r;
    }

    @Override
    protected void doProgress() {
        try {
            progressSends();
            progressRecvs();
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
     * writes fail first). Reads the next header when the receive side is between messages; the
     * blamed rank, or -1.
     */
    private int passedBlame() {
        RecvReq r = recvs.peek();
        if (r != null && r.headerDone) {
            return -1;
        }
        try {
            if (recvHeader.hasRemaining()) {
                channel.read(recvHeader);
            }
        } catch (IOException | RuntimeException ignored) {
            // nothing more to read
        }
        return recvHeader.hasRemaining() ? -1 : BlameHeader.blamedRank(recvHeader.getLong(0));
    }

    private void progressSends() throws IOException {
        SendReq r;
        while ((r = sends.peek()) != null) {
            if (!r.headerDone) {
                if (!r.headerStarted) {
                    sendHeader.clear();
                    sendHeader.putLong(0, r.src.byteSize());
                    r.headerStarted = true;
                    if (r.src.byteSize() > 0) {
                        r.window = r.src.asSlice(0, Math.min(WINDOW_BYTES, r.src.byteSize())).asByteBuffer();
                    }
                }
                if (r.window != null) {
                    // Header and payload in one writev: one segment, one wake-up for a small message.
                    int before = r.window.position();
                    pair[0] = sendHeader;
                    pair[1] = r.window;
                    channel.write(pair);
                    r.offset += r.window.position() - before;
                } else {
                    channel.write(sendHeader);
                }
                if (sendHeader.hasRemaining()) {
                    return;
                }
                sendHeader.clear();
                r.headerDone = true;
            }
            while (r.offset < r.src.byteSize()) {
                if (r.window == null || !r.window.hasRemaining()) {
                    r.window = r.src.asSlice(r.offset, Math.min(WINDOW_BYTES, r.src.byteSize() - r.offset))
                            .asByteBuffer();
                }
                int before = r.window.position();
                channel.write(r.window);
                int wrote = r.window.position() - before;
                r.offset += wrote;
                if (wrote == 0) {
                    return;
                }
            }
            r.complete();
            sends.poll();
        }
    }

    private void progressRecvs() throws IOException {
        RecvReq r;
        while ((r = recvs.peek()) != null) {
            if (!r.headerDone) {
                long got = readHeaderAndPayload(r);
                if (got < 0) {
                    throw eof();
                }
                if (recvHeader.hasRemaining()) {
                    return;
                }
                long bytes = recvHeader.getLong(0);
                recvHeader.clear();
                r.headerDone = true;
                int failed = BlameHeader.blamedRank(bytes);
                if (failed >= 0) {
                    throw peerGaveUp(self, failed, null);
                }
                if (bytes != r.dst.byteSize()) {
                    throw new CollectiveException("rank " + peer + " sent " + bytes + " bytes but rank " + self
                            + " expected "
                            + r.dst.byteSize() + " (mismatched counts or types across ranks)");
                }
            }
            long total = r.dst.byteSize();
            while (r.offset < total) {
                if (r.op == null) {
                    if (r.window == null || !r.window.hasRemaining()) {
                        r.window = r.dst.asSlice(r.offset, Math.min(WINDOW_BYTES, total - r.offset)).asByteBuffer();
                    }
                    int before = r.window.position();
                    if (read(r.window) < 0) {
                        throw eof();
                    }
                    int got = r.window.position() - before;
                    r.offset += got;
                    if (got == 0) {
                        return;
                    }
                } else {
                    // Fill a whole-element piece of staging, then fold it in.
                    if (r.window == null) {
                        int piece = (int) Math.min(STAGING_BYTES, total - r.offset);
                        stagingBuffer.clear().limit(piece);
                        r.window = stagingBuffer;
                    }
                    if (read(stagingBuffer) < 0) {
                        throw eof();
                    }
                    if (stagingBuffer.hasRemaining()) {
                        return;
                    }
                    int piece = stagingBuffer.limit();
                    r.fold(r.offset, staging, 0, piece / r.type.byteSize());
                    r.offset += piece;
                    r.window = null;
                }
            }
            r.complete();
            recvs.poll();
        }
    }

    /** Reads the header together with the first payload bytes (readv): one system call for a small message. */
    private long readHeaderAndPayload(RecvReq r) throws IOException {
        long total = r.dst.byteSize();
        if (total == 0) {
            return read(recvHeader);
        }
        if (r.window == null) {
            if (r.op == null) {
                r.window = r.dst.asSlice(0, Math.min(WINDOW_BYTES, total)).asByteBuffer();
            } else {
                stagingBuffer.clear().limit((int) Math.min(STAGING_BYTES, total));
                r.window = stagingBuffer;
            }
        }
        int before = r.window.position();
        pair[0] = recvHeader;
        pair[1] = r.window;
        long got = channel.read(pair);
        if (r.op == null) {
            r.offset += r.window.position() - before;
        }
        return got;
    }

    private int read(ByteBuffer b) throws IOException {
        return b.hasRemaining() ? channel.read(b) : 0;
    }

    private PeerFailedException eof() {
        return new PeerFailedException(peer, "rank " + self + ": rank " + peer
                + " closed its TCP connection (died or closed its communicator)", null);
    }

    @Override
    protected void doCheckPeer() {
        if (!channel.isOpen()) {
            throw new PeerFailedException(peer, "rank " + self + ": TCP connection to rank " + peer + " is closed",
                    null);
        }
        if (recvs.isEmpty() && recvHeader.hasRemaining()) {
            // Nothing posted: read ahead into the next header, which shows a closed connection (and
            // a passed-on blame) now; the next receive goes on from the bytes read here.
            int got;
            try {
                got = channel.read(recvHeader);
            } catch (IOException e) {
                throw new PeerFailedException(peer,
                        "rank " + self + ": TCP connection to rank " + peer + " failed (peer died?): " + e.getMessage(),
                                e);
            }
            if (got < 0) {
                throw eof();
            }
            int failed = recvHeader.hasRemaining() ? -1 : BlameHeader.blamedRank(recvHeader.getLong(0));
            if (failed >= 0) {
                throw peerGaveUp(self, failed, null);
            }
        }
    }

    /** Closes the socket (the peer reads end of stream); NIO makes this safe beside a read or write on another thread.
     * */
    @Override
    protected void signalClose() {
        int failed = blame();
        if (failed >= 0) {
            passBlame(failed);
        }
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing
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
    private void passBlame(int failed) {
        SendReq r = sends.peek();
        if (r != null && r.headerStarted) {
            return; // mid-message: the peer will just see the connection close
        }
        try {
            sendHeader.clear();
            sendHeader.putLong(0, BlameHeader.encode(failed));
            channel.write(sendHeader);
        } catch (IOException | RuntimeException ignored) {
            // the connection is gone already
        }
    }

    private static final class SendReq extends Request.Send {
        boolean headerStarted;
        boolean headerDone;
        ByteBuffer window;

        SendReq(TcpLink link, MemorySegment src) {
            super(link, src);
        }
    }

    private static final class RecvReq extends Request.Receive {
        boolean headerDone;
        ByteBuffer window;

        RecvReq(TcpLink link, MemorySegment dst, MemorySegment with, double withScale, double incomingScale,
                DataType type, ReduceOp op) {
            super(link, dst, with, withScale, incomingScale, type, op);
        }
    }
}
