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
 * TCP to any peer: authenticated, non-blocking sockets, per pair of ranks one shared by small messages both ways
 * and {@link Settings#TCP_DATA_CONNECTIONS} one-way ones per direction for large messages (see {@link TcpLink}).
 */
public final class TcpTransport implements Transport {
    /** The most one-way connections per direction a pair may use. */
    static final int MAX_DATA_CONNECTIONS = 8;
    private final SocketMesh mesh;

    /**
     * @param bindAddress where to listen; null: the local address this process uses to reach the rendezvous
     * @throws IllegalArgumentException when {@link Settings#TCP_DATA_CONNECTIONS} is not a number from 0 to 8
     */
    public TcpTransport(MutualAuth auth, String bindAddress) {
        this(auth, bindAddress, dataConnectionsFromSettings());
    }

    /**
     * As above with the number of one-way connections per direction given (0 to 8); a pair uses the smaller of
     * both ranks' numbers.
     */
    public TcpTransport(MutualAuth auth, String bindAddress, int dataConnections) {
        if (dataConnections < 0 || dataConnections > MAX_DATA_CONNECTIONS) {
            throw new IllegalArgumentException("one-way TCP connections per direction: 0 to " + MAX_DATA_CONNECTIONS
                    + ", not " + dataConnections);
        }
        this.mesh = new SocketMesh(auth, bindAddress, TcpLink.socketsFor(dataConnections));
    }

    static int dataConnectionsFromSettings() {
        return Settings.TCP_DATA_CONNECTIONS.intValue(0, MAX_DATA_CONNECTIONS, "a number of connections");
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
