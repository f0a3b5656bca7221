package dev.panamax.collectives.internal.transport.tcp;

import dev.panamax.collectives.internal.auth.MutualAuth;
import dev.panamax.collectives.internal.config.Settings;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.PeerInfo;
import dev.panamax.collectives.internal.transport.Rendezvous;
import dev.panamax.collectives.internal.transport.SocketMesh;
import dev.panamax.collectives.internal.transport.Transport;

import java.io.IOException;

/**
 * TCP to any peer: authenticated, non-blocking sockets, {@link Settings#TCP_CONNECTIONS} of them per
 * pair of ranks, which a {@link TcpLink} stripes large messages over.
 */
public final class TcpTransport implements Transport {
    private final SocketMesh mesh;

    /**
     * @param bindAddress where to listen; null: the local address this process uses to reach the rendezvous
     * @throws IllegalArgumentException when {@link Settings#TCP_CONNECTIONS} is not a number from 1 to 16
     */
    public TcpTransport(MutualAuth auth, String bindAddress) {
        this(auth, bindAddress, connectionsFromSettings());
    }

    /** As above with the number of connections per peer given (1 to {@link SocketMesh#MAX_CONNECTIONS_PER_PEER}). */
    public TcpTransport(MutualAuth auth, String bindAddress, int connectionsPerPeer) {
        this.mesh = new SocketMesh(auth, bindAddress, connectionsPerPeer);
    }

    static int connectionsFromSettings() {
        return Settings.TCP_CONNECTIONS.intValue(1, SocketMesh.MAX_CONNECTIONS_PER_PEER, "a number of connections");
    }

    @Override
    public String name() {
        return "tcp";
    }

    @Override
    public boolean canConnect(PeerInfo self, PeerInfo peer) {
        return true;
    }

    @Override
    public void prepare(Rendezvous rendezvous) throws IOException {
        mesh.listen(rendezvous, name());
    }

    @Override
    public void release() {
        mesh.close();
    }

    @Override
    public Session connect(Rendezvous rendezvous, PeerInfo[] peers, Link[] links) throws IOException {
        int rank = rendezvous.rank();
        mesh.connect(rendezvous, name(), peers, links, (peer, channels) -> new TcpLink(rank, peer, channels));
        return () -> { };
    }
}
