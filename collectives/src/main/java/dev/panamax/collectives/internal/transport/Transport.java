package dev.panamax.collectives.internal.transport;

import java.io.IOException;

/**
 * A way to reach peers of the job, as NCCL's transports are: the {@link TransportSelector} asks
 * each transport, in order of preference, whether it can connect to a peer, and has the first
 * that can connect to it. Every rank runs the same selection, so both ends of a pair agree.
 */
public interface Transport {
    /** The name its links report ({@link Link#kind()}): shm, tcp, verbs. */
    String name();

    /**
     * Whether this transport can connect {@code self} to {@code peer}. It must answer alike on both
     * sides of a pair (it may look only at what both know: their {@link PeerInfo}).
     */
    boolean canConnect(PeerInfo self, PeerInfo peer);

    /**
     * Called on every rank for every transport of the list before the ranks meet: opens what
     * peers must be able to reach before they connect (a listening socket) and publishes how to
     * reach it. Nothing by default.
     */
    default void prepare(Rendezvous rendezvous) throws IOException {
    }

    /**
     * Releases what {@link #prepare} opened and {@link #connect} did not take over (called once
     * the links are made, or on failure, also when this transport connected nobody). Idempotent.
     */
    default void release() {
    }

    /**
     * Connects this rank to every rank in {@code peers} (ascending by rank) and puts each link into
     * {@code links[rank]}. Every rank calls this for the same transports in the same order. On
     * failure it closes what it opened that is not yet in {@code links} and throws; the caller
     * closes the links.
     *
     * @return what the links share and must outlive them, released when the communicator closes
     */
    Session connect(Rendezvous rendezvous, PeerInfo[] peers, Link[] links) throws IOException;

    /** The resources a transport's links share (a shared-memory inbox, an opened RDMA device). */
    interface Session extends AutoCloseable {
        /** Sees every call's buffers before its schedule runs; null when the transport needs nothing. */
        default BufferRegistrar registrar() {
            return null;
        }

        /** Releases the shared resources; called once, after the links were closed. */
        @Override
        void close();
    }
}
