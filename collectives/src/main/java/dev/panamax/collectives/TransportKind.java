package dev.panamax.collectives;

import java.util.Locale;

/** Which transports a process communicator may use ({@link CommunicatorBuilder#transport}). */
public enum TransportKind {
    /** Shared memory to same-host peers, TCP to the others. */
    AUTO,
    /** Shared memory to every peer (all must share this host). */
    SHM,
    /** TCP to every peer. */
    TCP,
    /** RDMA (libibverbs reliable connections) to every peer; set up over TCP. */
    VERBS;

    /** The kind named {@code s} (auto, shm, tcp, verbs; any case). */
    public static TransportKind parse(String s) {
        try {
            return valueOf(s.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown transport '" + s + "'; known: auto, shm, tcp, verbs");
        }
    }
}
