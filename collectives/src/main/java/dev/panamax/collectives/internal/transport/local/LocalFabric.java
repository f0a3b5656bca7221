package dev.panamax.collectives.internal.transport.local;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.internal.runtime.CommunicatorImpl;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.Request;
import dev.panamax.collectives.internal.transport.Segments;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.Reductions;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The in-JVM transport: ranks are threads of one process. A send hands the receiver a reference to
 * the sender's segment; the receiver copies or reduces straight out of it (one pass, no staging)
 * and then completes the send.
 */
public final class LocalFabric {
    private final int size;
    private final ConcurrentLinkedQueue<Message>[][] boxes;
    private final String[] closed;
    private final int[] blamed;

    @SuppressWarnings("unchecked")
    private LocalFabric(int size) {
        this.size = size;
        this.boxes = new ConcurrentLinkedQueue[size][size];
        for (int i = 0; i < size; i++) {
            for (int j = 0; j < size; j++) {
                boxes[i][j] = new ConcurrentLinkedQueue<>();
            }
        }
        this.closed = new String[size];
        this.blamed = new int[size];
        java.util.Arrays.fill(blamed, -1);
    }

    /** {@code size} connected communicators, one per rank. */
    public static List<Communicator> create(int size, long timeoutNanos) {
        if (size < 1) {
            throw new IllegalArgumentException("group size must be >= 1: " + size);
        }
        LocalFabric g = new LocalFabric(size);
        List<Communicator> out = new ArrayList<>(size);
        for (int r = 0; r < size; r++) {
            Link[] links = new Link[size];
            for (int p = 0; p < size; p++) {
                if (p != r) {
                    links[p] = new LocalLink(g, r, p);
                }
            }
            int rank = r;
            out.add(new CommunicatorImpl(r, size, links, timeoutNanos, new HostAllocator(), size,
                    dev.panamax.collectives.Topology.flat(size, dev.panamax.collectives.Topology.SHARED_MEMORY.bytesPerSecond(),
                            dev.panamax.collectives.Topology.SHARED_MEMORY.latencySeconds()), () -> g.markClosed(rank)));
        }
        return List.copyOf(out);
    }

    private synchronized void markClosed(int rank) {
        markClosed(rank, -1);
    }

    private synchronized void markClosed(int rank, int failed) {
        if (closed[rank] == null) {
            closed[rank] = "rank " + rank + " closed its communicator";
            blamed[rank] = failed;
        }
    }

    /** The rank that {@code rank} blamed when it gave up, or -1. */
    private synchronized int blamed(int rank) {
        return blamed[rank];
    }

    private synchronized String closedReason(int rank) {
        return closed[rank];
    }

    private static final class Message {
        final MemorySegment data;
        volatile boolean consumed;
        volatile String error;

        Message(MemorySegment data) {
            this.data = data;
        }
    }

    private static final class LocalLink extends Link {
        private final LocalFabric group;
        private final int self;
        private final ConcurrentLinkedQueue<Message> out;
        private final ConcurrentLinkedQueue<Message> in;
        private final ArrayDeque<Request.Receive> recvs = new ArrayDeque<>();

        LocalLink(LocalFabric group, int self, int peer) {
            super(peer);
            this.group = group;
            this.self = self;
            this.out = group.boxes[self][peer];
            this.in = group.boxes[peer][self];
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
            SendReq r = new SendReq(this, new Message(Segments.unscoped(src)));
            out.add(r.message);
            return r;
        }

        @Override
        public Request recv(MemorySegment dst, MemorySegment with, DataType type, ReduceOp op) {
            Request.Receive r = new Request.Receive(this, dst, with, type, op);
            recvs.add(r);
            return r;
        }

        @Override
        protected void doProgress() {
            Request.Receive r;
            Message m;
            while ((r = recvs.peek()) != null && (m = in.poll()) != null) {
                long expected = r.dst.byteSize();
                if (m.data.byteSize() != expected) {
                    String msg = "rank " + peer + " sent " + m.data.byteSize() + " bytes but rank " + self + " expected " + expected
                            + " (mismatched counts or types across ranks)";
                    m.error = msg;
                    m.consumed = true;
                    throw new CollectiveException(msg);
                }
                if (r.op == null) {
                    MemorySegment.copy(m.data, 0, r.dst, 0, expected);
                } else {
                    Reductions.reduce(r.type, r.op, r.dst, 0, r.with, 0, m.data, 0, expected / r.type.byteSize());
                }
                m.consumed = true;
                r.complete();
                recvs.poll();
            }
        }

        @Override
        protected void doCheckPeer() {
            String reason = group.closedReason(peer);
            int failed = reason == null ? -1 : group.blamed(peer);
            if (failed >= 0) {
                throw peerGaveUp(self, failed, null);
            }
            if (reason != null) {
                throw new PeerFailedException(peer, "rank " + self + ": peer rank " + peer + " is gone: " + reason, null);
            }
        }

        @Override
        protected void signalClose() {
            group.markClosed(self, blame());
        }

        @Override
        protected void release() {
            // nothing of its own: messages reference the senders' segments
        }

        private static final class SendReq extends Request.Send {
            final Message message;

            SendReq(LocalLink link, Message message) {
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
}
