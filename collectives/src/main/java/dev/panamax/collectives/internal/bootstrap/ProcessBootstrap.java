package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.LaunchConfig;
import dev.panamax.collectives.TransportKind;
import dev.panamax.collectives.internal.auth.MutualAuth;
import dev.panamax.collectives.internal.runtime.CommunicatorImpl;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.PeerInfo;
import dev.panamax.collectives.internal.transport.Rendezvous;
import dev.panamax.collectives.internal.transport.Transport;
import dev.panamax.collectives.internal.transport.TransportSelector;
import dev.panamax.collectives.internal.transport.shm.ShmAllocator;
import dev.panamax.collectives.internal.transport.shm.ShmTransport;
import dev.panamax.collectives.internal.transport.tcp.TcpTransport;
import dev.panamax.collectives.internal.transport.verbs.VerbsTransport;

import java.io.IOException;
import java.net.InetAddress;
import java.util.List;

/**
 * Connects the communicator of one process: every rank meets the others at rank 0's rendezvous
 * store, publishes who it is (process id and {@linkplain HostIdentity host identity}), then a
 * {@link TransportSelector} connects a link to each peer over the first transport of the
 * {@link TransportKind}'s list that can reach it: shared memory to peers on this host and TCP to
 * the others for {@code auto}; only the forced one otherwise. Nobody leaves before everyone is
 * connected.
 */
public final class ProcessBootstrap {
    private ProcessBootstrap() {
    }

    /**
     * Connects this process's communicator. {@code secret} is the job's secret (null or empty:
     * none, the job is unauthenticated); every rank must be given the same.
     */
    public static Communicator connect(LaunchConfig config, TransportKind kind, long timeoutNanos, String bindAddress,
                                       String secret) {
        int rank = config.rank();
        int size = config.worldSize();
        MutualAuth auth = MutualAuth.of(secret);
        StoreServer server = null;
        StoreClient store = null;
        ShmAllocator allocator = null;
        TransportSelector selector = null;
        TransportSelector.Connected connected = null;
        try {
            if (rank == 0) {
                server = new StoreServer(config.masterAddr(), config.masterPort(), auth);
            }
            store = StoreClient.connect(config.masterAddr(), config.masterPort(), timeoutNanos, rank, auth);
            allocator = new ShmAllocator();
            selector = new TransportSelector(transports(kind, allocator, auth, bindAddress));
            Rendezvous rendezvous = new StoreRendezvous(store, rank, size, timeoutNanos);
            // Listening sockets open before this rank announces itself, so early peers queue up.
            selector.prepare(rendezvous);
            PeerInfo self = new PeerInfo(rank, ProcessHandle.current().pid(), HostIdentity.current());
            store.set("rank/" + rank, self.pid() + " " + self.host());
            PeerInfo[] peers = new PeerInfo[size];
            String[] hosts = new String[size];
            for (int p = 0; p < size; p++) {
                String[] f = store.get("rank/" + p).split(" ");
                peers[p] = new PeerInfo(p, Long.parseLong(f[0]), f[1]);
                hosts[p] = f[1];
            }
            connected = selector.connect(rendezvous, self, peers);

            // Nobody may leave before every peer has mapped its inbox and connected.
            store.barrier("connected", size);

            TransportSelector.Connected sessions = connected;
            StoreServer ownServer = server;
            StoreClient ownStore = store;
            return new CommunicatorImpl(rank, size, connected.links(), timeoutNanos, allocator,
                    HostIdentity.ranksOn(hosts, self.host()), HostIdentity.detectTopology(hosts, kind),
                            connected.registrar(), () -> {
                        sessions.close();
                        ownStore.close();
                        if (ownServer != null) {
                            ownServer.close();
                        }
                    });
        } catch (IOException e) {
            closeAll(selector, connected, allocator, store, server);
            throw new CollectiveException("rank " + rank + ": connecting the communicator failed: " + e.getMessage(),
                    e);
        } catch (RuntimeException e) {
            closeAll(selector, connected, allocator, store, server);
            throw e;
        }
    }

    /** The transports of {@code kind}, in order of preference. */
    private static List<Transport> transports(TransportKind kind, ShmAllocator allocator, MutualAuth auth,
            String bindAddress) {
        return switch (kind) {
            case AUTO -> List.of(new ShmTransport(allocator), new TcpTransport(auth, bindAddress));
            case SHM -> List.of(new ShmTransport(allocator));
            case TCP -> List.of(new TcpTransport(auth, bindAddress));
            case VERBS -> List.of(new VerbsTransport(auth, bindAddress));
        };
    }

    private static void closeAll(TransportSelector selector, TransportSelector.Connected connected,
            ShmAllocator allocator,
                                 StoreClient store, StoreServer server) {
        if (selector != null) {
            selector.release();
        }
        if (connected != null) {
            for (Link l : connected.links()) {
                if (l != null) {
                    l.close();
                }
            }
            connected.close();
        }
        if (allocator != null) {
            allocator.close();
        }
        if (store != null) {
            store.close();
        }
        if (server != null) {
            server.close();
        }
    }

    /** The rendezvous store as the transports see it: values are published under {@code name/rank}. */
    private record StoreRendezvous(StoreClient store, int rank, int size, long timeoutNanos) implements Rendezvous {
        @Override
        public void publish(String name, String value) {
            store.set(name + "/" + rank, value);
        }

        @Override
        public String lookup(String name, int peer) {
            return store.get(name + "/" + peer);
        }

        @Override
        public InetAddress localAddress() {
            return store.localAddress();
        }
    }
}
