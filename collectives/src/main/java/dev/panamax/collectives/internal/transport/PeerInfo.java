package dev.panamax.collectives.internal.transport;

/**
 * What the rendezvous tells every rank about one rank of the job, before any link exists: its
 * rank, its process id and its host identity (processes with the same identity can share memory).
 */
public record PeerInfo(int rank, long pid, String host) {
    /** True when the two ranks run on the same host, by host identity. */
    public boolean sameHost(PeerInfo other) {
        return host.equals(other.host);
    }
}
