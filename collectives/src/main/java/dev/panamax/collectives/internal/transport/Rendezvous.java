package dev.panamax.collectives.internal.transport;

import java.net.InetAddress;

/**
 * What a {@link Transport} may use while it connects: this rank, the job's size and timeout, and a
 * board on which each rank publishes values (an endpoint, a shared-memory handle) for its peers to
 * read. The bootstrap implements it over the rendezvous store.
 */
public interface Rendezvous {
    /** This rank. */
    int rank();

    /** The number of ranks in the job. */
    int size();

    /** The bound on every wait while connecting. */
    long timeoutNanos();

    /** Publishes {@code value} under {@code name} for this rank. */
    void publish(String name, String value);

    /** The value {@code peer} published under {@code name}, waiting until it has. */
    String lookup(String name, int peer);

    /** The local address this process uses to reach the rendezvous: where to listen when no address is given. */
    InetAddress localAddress();

    /**
     * Whether {@code peer} is known to have failed (its process gone), so that a wait for it can end
     * before the timeout. False by default: only a rendezvous that tracks liveness knows.
     */
    default boolean failed(int peer) {
        return false;
    }
}
