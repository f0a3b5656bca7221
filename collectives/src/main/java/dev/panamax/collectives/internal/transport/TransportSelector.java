package dev.panamax.collectives.internal.transport;

import dev.panamax.collectives.CollectiveException;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;

/**
 * Connects one process to its peers over the first transport, in order of preference, that can
 * reach each peer ({@link Transport#canConnect}), as NCCL tries its transports in turn. Every rank
 * makes the same choice for a pair, since the answer depends only on what both ranks know.
 */
public final class TransportSelector {
    private final List<Transport> transports;

    /** @param transports in order of preference */
    public TransportSelector(List<Transport> transports) {
        if (transports.isEmpty()) {
            throw new IllegalArgumentException("no transports to choose from");
        }
        this.transports = List.copyOf(transports);
    }

    /** The links to every peer, and what their transports share (closed after the links). */
    public record Connected(Link[] links, List<Transport.Session> sessions) implements AutoCloseable {
        /** The registrars of the sessions that have one, as one; null when none has. */
        public BufferRegistrar registrar() {
            List<BufferRegistrar> all = new ArrayList<>();
            for (Transport.Session s : sessions) {
                if (s.registrar() != null) {
                    all.add(s.registrar());
                }
            }
            if (all.isEmpty()) {
                return null;
            }
            if (all.size() == 1) {
                return all.get(0);
            }
            return (buffers, count) -> all.forEach(r -> r.register(buffers, count));
        }

        /** Releases the sessions, last connected first. */
        @Override
        public void close() {
            closeSessions(sessions);
        }
    }

    /** Prepares every transport ({@link Transport#prepare}); on failure releases them all and throws. */
    public void prepare(Rendezvous rendezvous) throws IOException {
        try {
            for (Transport t : transports) {
                t.prepare(rendezvous);
            }
        } catch (IOException | RuntimeException e) {
            release();
            throw e;
        }
    }

    /** Releases what the transports' {@link Transport#prepare} opened (idempotent). */
    public void release() {
        for (Transport t : transports) {
            try {
                t.release();
            } catch (RuntimeException ignored) {
                // best effort: the others still need releasing
            }
        }
    }

    /**
     * The transport for each rank ({@code null} for {@code self}), by preference.
     *
     * @throws CollectiveException naming a peer that no transport can reach
     */
    public Transport[] choose(PeerInfo self, PeerInfo[] peers) {
        Transport[] chosen = new Transport[peers.length];
        for (PeerInfo p : peers) {
            if (p.rank() == self.rank()) {
                continue;
            }
            for (Transport t : transports) {
                if (t.canConnect(self, p)) {
                    chosen[p.rank()] = t;
                    break;
                }
            }
            if (chosen[p.rank()] == null) {
                throw new CollectiveException("rank " + self.rank() + ": no transport of " + names()
                        + " can connect to rank "
                        + p.rank() + ", which runs on another host (" + p.host() + "; this rank: " + self.host() + ")");
            }
        }
        return chosen;
    }

    /**
     * Connects {@code self} to every other rank of {@code peers} (indexed by rank), after
     * {@link #prepare}. On failure everything opened so far is closed before the exception leaves;
     * either way what the transports prepared is released.
     */
    public Connected connect(Rendezvous rendezvous, PeerInfo self, PeerInfo[] peers) throws IOException {
        Link[] links = new Link[peers.length];
        List<Transport.Session> sessions = new ArrayList<>();
        try {
            Transport[] chosen = choose(self, peers);
            for (Transport t : transports) {
                PeerInfo[] mine = assignedTo(chosen, t, peers);
                if (mine.length > 0) {
                    sessions.add(t.connect(rendezvous, mine, links));
                }
            }
            Transport.Session board = CpuBoard.connect(rendezvous, self, peers, links);
            if (board != null) {
                sessions.add(board);
            }
            release();
            return new Connected(links, List.copyOf(sessions));
        } catch (IOException | RuntimeException e) {
            release();
            for (Link l : links) {
                if (l != null) {
                    l.close();
                }
            }
            closeSessions(sessions);
            throw e;
        }
    }

    private static PeerInfo[] assignedTo(Transport[] chosen, Transport t, PeerInfo[] peers) {
        List<PeerInfo> out = new ArrayList<>();
        for (int r = 0; r < chosen.length; r++) {
            if (chosen[r] == t) {
                out.add(peers[r]);
            }
        }
        return out.toArray(new PeerInfo[0]);
    }

    private static void closeSessions(List<Transport.Session> sessions) {
        for (int i = sessions.size() - 1; i >= 0; i--) {
            try {
                sessions.get(i).close();
            } catch (RuntimeException ignored) {
                // best effort: the others still need releasing
            }
        }
    }

    private String names() {
        StringJoiner j = new StringJoiner(", ", "[", "]");
        for (Transport t : transports) {
            j.add(t.name());
        }
        return j.toString();
    }
}
