package dev.panamax.collectives.internal.transport.tcp;

import dev.panamax.collectives.internal.auth.MutualAuth;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.PeerInfo;
import dev.panamax.collectives.internal.transport.Rendezvous;
import dev.panamax.collectives.internal.transport.SocketMesh;
import dev.panamax.collectives.internal.transport.Transport;

import java.io.IOException;

/** TCP to any peer: one authenticated, non-blocking socket per peer ({@link TcpLink}). */
public final class TcpTransport implements Transport {
    private final SocketMesh mesh;

    /** @param bindAddress where to listen; null: the local address this process uses to reach the rendezvous */
    public TcpTransport(MutualAuth auth, String bindAddress) {
        this.mesh = new SocketMesh(auth, bindAddress);
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
        mesh.connect(rendezvous, name(), peers, links, (peer, channel) -> new TcpLink(rank, peer, channel));
        return () -> { };
    }
}
