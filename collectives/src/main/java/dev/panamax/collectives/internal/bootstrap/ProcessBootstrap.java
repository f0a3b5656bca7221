package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.CommunicatorBuilder.TransportKind;
import dev.panamax.collectives.LaunchConfig;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.internal.runtime.CommunicatorImpl;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.shm.ShmAllocator;
import dev.panamax.collectives.internal.transport.shm.ShmLink;
import dev.panamax.collectives.internal.transport.tcp.TcpLink;
import dev.panamax.collectives.internal.transport.verbs.VerbsDomain;
import dev.panamax.collectives.internal.transport.verbs.VerbsLink;
import dev.panamax.memory.SharedMemory;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Connects the communicator of one process: rendezvous through the store, then a link per peer.
 * Peers on this host (same {@linkplain #hostIdentity() host identity}: host name and boot id) get
 * shared memory unless TCP is forced; the others TCP. TCP connections go from the higher rank to
 * the lower, each opened by the {@link Store.Auth} handshake in which the connecting rank names
 * itself and both prove they hold the job's secret; the accepting rank runs each handshake on its
 * own thread under a read timeout, so a stranger that connects and stays silent delays nobody, and
 * drops (and logs) any connection that fails it. They listen on the bind address
 * when one is given, else on the local address of this process's connection to the store (the
 * address it uses to reach the master).
 *
 * <p>{@code PANAMAX_NODE} (system property {@code panamax.node}) overrides the host identity: when
 * it is set and not blank the identity is {@code node:<value>}, so ranks with the same value use
 * shared memory to each other and ranks with different values TCP, whatever host they run on. It
 * serves to emulate several nodes on one machine (for example one network namespace per rank,
 * see {@code docs/emulation.md}); ranks given the same value must really share a host (same PID
 * namespace and {@code /dev/shm}), since shared memory is then used between them.
 */
public final class ProcessBootstrap {
    private static final int SOCKET_BUFFER_BYTES = 4 << 20;

    private ProcessBootstrap() {
    }

    private static final String PEER_CONTEXT = "panamax-peer-v1 to rank ";

    /**
     * Connects this process's communicator. {@code secret} is the job's secret (null or empty:
     * none, the job is unauthenticated); every rank must be given the same.
     */
    public static Communicator connect(LaunchConfig config, TransportKind kind, long timeoutNanos, String bindAddress, String secret) {
        int rank = config.rank();
        int size = config.worldSize();
        Store.Auth auth = Store.Auth.of(secret);
        Store.Server server = null;
        Store.Client store = null;
        List<AutoCloseable> opened = new ArrayList<>();
        try {
            if (rank == 0) {
                server = new Store.Server(config.masterAddr(), config.masterPort(), auth);
            }
            store = Store.Client.connect(config.masterAddr(), config.masterPort(), timeoutNanos, rank, auth);
            long pid = ProcessHandle.current().pid();
            String host = hostIdentity();

            InetAddress local = bindAddress != null ? InetAddress.getByName(bindAddress) : store.localAddress();
            ServerSocketChannel listener = ServerSocketChannel.open();
            opened.add(listener);
            listener.bind(new InetSocketAddress(local, 0), size);
            String endpoint = local.getHostAddress() + ":" + ((InetSocketAddress) listener.getLocalAddress()).getPort();

            store.set("rank/" + rank, pid + " " + host + " " + endpoint);
            long[] pids = new long[size];
            String[] hosts = new String[size];
            String[] endpoints = new String[size];
            for (int p = 0; p < size; p++) {
                String[] f = store.get("rank/" + p).split(" ");
                pids[p] = Long.parseLong(f[0]);
                hosts[p] = f[1];
                endpoints[p] = f[2];
            }

            boolean[] useShm = new boolean[size];
            boolean anyShm = false;
            for (int p = 0; p < size; p++) {
                if (p == rank) {
                    continue;
                }
                boolean sameHost = hosts[p].equals(host);
                if (kind == TransportKind.SHM && !sameHost) {
                    throw new CollectiveException("transport shm was forced but rank " + p + " runs on another host (" + hosts[p] + ")");
                }
                useShm[p] = sameHost && kind != TransportKind.TCP && kind != TransportKind.VERBS;
                anyShm |= useShm[p];
            }

            Link[] links = new Link[size];
            ShmAllocator shmAllocator = new ShmAllocator();
            opened.add(shmAllocator);
            SharedMemory.Region inbox = null;
            if (anyShm) {
                inbox = SharedMemory.create("inbox-" + rank, size * ShmLink.BLOCK_BYTES);
                opened.add(inbox);
                store.set("shm/" + rank, inbox.handle().encode());
                for (int p = 0; p < size; p++) {
                    if (useShm[p]) {
                        SharedMemory.Region peerInbox = SharedMemory.attach(SharedMemory.Handle.decode(store.get("shm/" + p)));
                        links[p] = new ShmLink(rank, p, pids[p], inbox.segment(), peerInbox, shmAllocator);
                        opened.add(links[p]);
                    }
                }
            }
            VerbsDomain verbs = null;
            LinkFactory factory = (peer, ch) -> new TcpLink(rank, peer, ch);
            if (kind == TransportKind.VERBS) {
                VerbsDomain domain = VerbsDomain.open();
                verbs = domain;
                opened.add(domain::release);
                factory = (peer, ch) -> VerbsLink.connect(rank, peer, ch, domain, timeoutNanos);
            }
            connectTcp(rank, size, useShm, endpoints, listener, links, opened, timeoutNanos, auth, factory);
            listener.close();

            // Nobody may leave before every peer has mapped its inbox and connected.
            store.barrier("connected", size);

            SharedMemory.Region ownInbox = inbox;
            Store.Server ownServer = server;
            Store.Client ownStore = store;
            VerbsDomain ownVerbs = verbs;
            CommunicatorImpl comm = new CommunicatorImpl(rank, size, links, timeoutNanos, shmAllocator, localRanks(hosts, host), detectTopology(hosts, kind), () -> {
                if (ownVerbs != null) {
                    ownVerbs.release();
                }
                if (ownInbox != null) {
                    ownInbox.close();
                }
                ownStore.close();
                if (ownServer != null) {
                    ownServer.close();
                }
            });
            if (verbs != null) {
                comm.registerBuffersWith(verbs::register);
            }
            return comm;
        } catch (IOException e) {
            closeAll(opened, store, server);
            throw new CollectiveException("rank " + rank + ": connecting the communicator failed: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            closeAll(opened, store, server);
            throw e;
        }
    }

    private record Accepted(int peer, SocketChannel channel) {
    }

    /** Turns an authenticated connection to {@code peer} into its link (TCP itself, or a verbs queue pair set up over it). */
    private interface LinkFactory {
        Link create(int peer, SocketChannel channel) throws IOException;
    }

    private static void connectTcp(int rank, int size, boolean[] useShm, String[] endpoints, ServerSocketChannel listener,
                                   Link[] links, List<AutoCloseable> opened, long timeoutNanos, Store.Auth auth,
                                   LinkFactory factory) throws IOException {
        long deadline = System.nanoTime() + timeoutNanos;
        // Connect to every lower TCP peer, proving who we are and checking that it is the peer.
        for (int p = 0; p < rank; p++) {
            if (useShm[p]) {
                continue;
            }
            String[] hp = endpoints[p].split(":");
            SocketChannel ch = SocketChannel.open();
            opened.add(ch);
            tune(ch);
            ch.connect(new InetSocketAddress(hp[0], Integer.parseInt(hp[1])));
            // The peer answers once it is done connecting to the ranks below it: wait up to the deadline.
            ch.socket().setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, (deadline - System.nanoTime()) / 1_000_000)));
            try {
                auth.connect(new DataInputStream(ch.socket().getInputStream()), new DataOutputStream(ch.socket().getOutputStream()),
                        PEER_CONTEXT + p, rank);
            } catch (Store.Auth.Rejected e) {
                throw new CollectiveException("rank " + rank + ": rank " + p + " at " + endpoints[p]
                        + " rejected this rank's TCP connection: wrong PANAMAX_SECRET?", e);
            } catch (Store.Auth.Unproven e) {
                throw new CollectiveException("rank " + rank + ": the endpoint of rank " + p + " at " + endpoints[p]
                        + " could not prove it holds the job's secret: " + e.getMessage(), e);
            } catch (java.net.SocketTimeoutException e) {
                throw new CollectiveTimeoutException("rank " + rank + ": rank " + p + " at " + endpoints[p] + " did not answer the TCP handshake");
            }
            ch.socket().setSoTimeout(0);
            links[p] = factory.create(p, ch);
            opened.add(links[p]);
        }
        // Accept every higher TCP peer; each handshake runs on its own thread under a read timeout.
        int expected = 0;
        for (int p = rank + 1; p < size; p++) {
            if (!useShm[p]) {
                expected++;
            }
        }
        BlockingQueue<Accepted> proven = new LinkedBlockingQueue<>();
        listener.configureBlocking(false);
        while (expected > 0) {
            SocketChannel ch = listener.accept();
            if (ch != null) {
                opened.add(ch);
                Thread.ofPlatform().daemon().name("panamax-handshake-" + rank).start(() -> handshake(rank, size, useShm, ch, auth, proven));
                continue;
            }
            Accepted a;
            try {
                a = proven.poll(1, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CollectiveException("interrupted while connecting");
            }
            if (a == null) {
                if (System.nanoTime() - deadline > 0) {
                    throw new CollectiveTimeoutException("rank " + rank + ": timed out waiting for TCP connections from higher ranks");
                }
                continue;
            }
            if (links[a.peer()] != null) {
                a.channel().close(); // a second proven connection for the same rank: keep the first
                continue;
            }
            links[a.peer()] = factory.create(a.peer(), a.channel());
            opened.add(links[a.peer()]);
            expected--;
        }
    }

    /** The accepting side of one TCP connection: queues it when it proves to be a higher TCP peer, else logs and closes it. */
    private static void handshake(int rank, int size, boolean[] useShm, SocketChannel ch, Store.Auth auth, BlockingQueue<Accepted> proven) {
        Object remote = "?";
        try {
            remote = ch.getRemoteAddress();
            ch.configureBlocking(true);
            tune(ch);
            ch.socket().setSoTimeout(Store.Auth.HANDSHAKE_TIMEOUT_MILLIS);
            int p = auth.accept(new DataInputStream(ch.socket().getInputStream()), new DataOutputStream(ch.socket().getOutputStream()),
                    PEER_CONTEXT + rank, claim -> claim > rank && claim < size && !useShm[claim]);
            ch.socket().setSoTimeout(0);
            proven.add(new Accepted(p, ch));
        } catch (IOException | RuntimeException e) {
            if (ch.isOpen()) {
                Store.Auth.LOG.log(System.Logger.Level.WARNING, "rank " + rank + ": rejected a TCP connection from " + remote + ": "
                        + (e instanceof IOException io ? Store.Auth.reason(io) : e.toString()));
            }
            try {
                ch.close();
            } catch (IOException ignored) {
                // dropping it
            }
        }
    }

    private static void tune(SocketChannel ch) throws IOException {
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        ch.setOption(StandardSocketOptions.SO_SNDBUF, SOCKET_BUFFER_BYTES);
        ch.setOption(StandardSocketOptions.SO_RCVBUF, SOCKET_BUFFER_BYTES);
    }

    /**
     * The hierarchy seen from the host identities: when there are several hosts and each runs the
     * same number k > 1 of ranks, two levels (k ranks per host, then the hosts) with the ranks of
     * each host grouped in rank order; otherwise one flat level. Levels within a host get the
     * shared-memory defaults (TCP's when TCP is forced), levels across hosts TCP's, until a
     * topology with measured values is set. Every rank computes the same.
     */
    static Topology detectTopology(String[] hosts, TransportKind kind) {
        int n = hosts.length;
        Topology.Level near = kind == TransportKind.TCP ? Topology.TCP : Topology.SHARED_MEMORY;
        Topology.Level far = Topology.TCP;
        java.util.Map<String, java.util.List<Integer>> byHost = new java.util.LinkedHashMap<>();
        for (int r = 0; r < n; r++) {
            byHost.computeIfAbsent(hosts[r], h -> new java.util.ArrayList<>()).add(r);
        }
        int k = byHost.values().iterator().next().size();
        boolean uniform = byHost.values().stream().allMatch(l -> l.size() == k);
        if (byHost.size() == 1) {
            return Topology.flat(n, near.bytesPerSecond(), near.latencySeconds());
        }
        if (k < 2 || !uniform) {
            return Topology.flat(n, far.bytesPerSecond(), far.latencySeconds());
        }
        int[] placement = new int[n];
        int pos = 0;
        for (java.util.List<Integer> l : byHost.values()) {
            for (int r : l) {
                placement[pos++] = r;
            }
        }
        Topology.Level inner = new Topology.Level(k, near.bytesPerSecond(), near.latencySeconds());
        Topology.Level outer = new Topology.Level(byHost.size(), far.bytesPerSecond(), far.latencySeconds());
        return new Topology(java.util.List.of(inner, outer), placement);
    }

    private static int localRanks(String[] hosts, String host) {
        int n = 0;
        for (String h : hosts) {
            if (h.equals(host)) {
                n++;
            }
        }
        return n;
    }

    /** System property overriding the host identity; the environment variable is {@code PANAMAX_NODE}. */
    static final String NODE_PROPERTY = "panamax.node";

    /**
     * Which processes can share memory: {@code node:<PANAMAX_NODE>} when that is set (property
     * {@code panamax.node} first, then the environment) and not blank, else the host name plus the
     * kernel boot id.
     */
    static String hostIdentity() {
        return hostIdentity(System.getProperty(NODE_PROPERTY, System.getenv("PANAMAX_NODE")));
    }

    static String hostIdentity(String node) {
        if (node != null && !node.isBlank()) {
            return ("node:" + node.trim()).replace(' ', '_');
        }
        String name;
        try {
            name = InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            name = "localhost";
        }
        String boot = "";
        try {
            boot = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
        } catch (IOException ignored) {
            // not Linux: the name alone
        }
        return (name + "/" + boot).replace(' ', '_');
    }

    private static void closeAll(List<AutoCloseable> opened, Store.Client store, Store.Server server) {
        for (int i = opened.size() - 1; i >= 0; i--) {
            try {
                opened.get(i).close();
            } catch (Exception ignored) {
                // unwinding a failed connect
            }
        }
        if (store != null) {
            store.close();
        }
        if (server != null) {
            server.close();
        }
    }
}
