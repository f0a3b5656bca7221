package dev.panamax.collectives.internal.transport.verbs;

import dev.panamax.collectives.internal.auth.MutualAuth;
import dev.panamax.collectives.internal.transport.BufferRegistrar;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.PeerInfo;
import dev.panamax.collectives.internal.transport.Rendezvous;
import dev.panamax.collectives.internal.transport.SocketMesh;
import dev.panamax.collectives.internal.transport.Transport;

import java.io.IOException;

/**
 * RDMA over libibverbs to any peer: a reliable connected queue pair per peer, set up over an
 * authenticated TCP connection that then stays open for liveness ({@link VerbsLink}). The opened
 * device is shared by the links ({@link VerbsDomain}), and every call's buffers are registered
 * with it before the call runs, so transfers go straight from and into them.
 */
public final class VerbsTransport implements Transport {
    private final SocketMesh mesh;

    /** @param bindAddress where to listen for the set-up connections; null: the address used to reach the rendezvous */
    public VerbsTransport(MutualAuth auth, String bindAddress) {
        this.mesh = new SocketMesh(auth, bindAddress, 1);
    }

    @Override
    public String name() {
        return "verbs";
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
        long timeoutNanos = rendezvous.timeoutNanos();
        VerbsDomain domain = VerbsDomain.open();
        try {
            mesh.connect(rendezvous, name(), peers, links, (peer, channels) ->
                    VerbsLink.connect(rank, peer, channels[0], domain, timeoutNanos));
        } catch (IOException | RuntimeException e) {
            domain.release();
            throw e;
        }
        return new Session() {
            @Override
            public BufferRegistrar registrar() {
                return domain::register;
            }

            @Override
            public void close() {
                domain.release();
            }
        };
    }
}
