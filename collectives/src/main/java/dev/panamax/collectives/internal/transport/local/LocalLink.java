package dev.panamax.collectives.internal.transport.local;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.Request;
import dev.panamax.collectives.internal.transport.Segments;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.concurrent.ConcurrentLinkedQueue;

/** One rank's link to one peer over the {@link LocalFabric}'s mailboxes. */
final class LocalLink extends Link {
    private final LocalFabric fabric;
    private final int self;
    private final ConcurrentLinkedQueue<LocalFabric.Message> out;
    private final ConcurrentLinkedQueue<LocalFabric.Message> in;
    private final ArrayDeque<Request.Receive> recvs = new ArrayDeque<>();

    LocalLink(LocalFabric fabric, int self, int peer) {
        super(peer);
        this.fabric = fabric;
        this.self = self;
        this.out = fabric.boxes[self][peer];
        this.in = fabric.boxes[peer][self];
    }

    @Override
    public String kind() {
        return "local";
    }

    @Override
    public Request send(MemorySegment src) {
        // The receiving thread reads the sender's memory; the segment may be confined to the
        // sending thread, so hand over an unscoped view. The sender keeps it alive: it waits
        // for the receiver to consume the message before the collective returns.
        SendReq r = new SendReq(this, new LocalFabric.Message(Segments.unscoped(src)));
        out.add(r.message);
        return r;
    }

    @Override
    public Request recv(MemorySegment dst, MemorySegment with, double withScale, double incomingScale,
            DataType type, ReduceOp op) {
        Request.Receive r = new Request.Receive(this, dst, with, withScale, incomingScale, type, op);
        recvs.add(r);
        return r;
    }

    @Override
    protected void doProgress() {
        Request.Receive r;
        LocalFabric.Message m;
        while ((r = recvs.peek()) != null && (m = in.poll()) != null) {
            long expected = r.dst.byteSize();
            if (m.data.byteSize() != expected) {
                String msg = "rank " + peer + " sent " + m.data.byteSize() + " bytes but rank " + self + " expected "
                        + expected
                        + " (mismatched counts or types across ranks)";
                m.error = msg;
                m.consumed = true;
                throw new CollectiveException(msg);
            }
            if (r.op == null) {
                MemorySegment.copy(m.data, 0, r.dst, 0, expected);
            } else {
                r.fold(0, m.data, 0, expected / r.type.byteSize());
            }
            m.consumed = true;
            r.complete();
            recvs.poll();
        }
    }

    @Override
    protected void doCheckPeer() {
        String reason = fabric.closedReason(peer);
        int failed = reason == null ? -1 : fabric.blamed(peer);
        if (failed >= 0) {
            throw peerGaveUp(self, failed, null);
        }
        if (reason != null) {
            throw new PeerFailedException(peer, "rank " + self + ": peer rank " + peer + " is gone: " + reason, null);
        }
    }

    @Override
    protected void signalClose() {
        fabric.markClosed(self, blame());
    }

    @Override
    protected void release() {
        // nothing of its own: messages reference the senders' segments
    }

    private static final class SendReq extends Request.Send {
        final LocalFabric.Message message;

        SendReq(LocalLink link, LocalFabric.Message message) {
            super(link, message.data);
            this.message = message;
        }

        @Override
        protected boolean checkComplete() {
            if (!message.consumed) {
                return false;
            }
            String e = message.error;
            if (e != null) {
                throw new CollectiveException(e);
            }
            return true;
        }
    }

}
