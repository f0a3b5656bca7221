package dev.panamax.collectives.internal.transport;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.internal.auth.MutualAuth;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Authenticated TCP connections from this rank to a set of peers, each turned into a link: the
 * groundwork of the TCP transport (a link is the socket) and of the verbs transport (a queue pair
 * is set up over the socket, which then carries liveness).
 *
 * <p>Each rank listens on the bind address when one is given, else on the local address of its
 * connection to the rendezvous (the address it uses to reach the master), and publishes the
 * endpoint. Connections go from the higher rank to the lower, each opened by the {@link MutualAuth}
 * handshake in which the connecting rank names itself and both prove they hold the job's secret;
 * the accepting rank runs each handshake on its own thread under a read timeout, so a stranger that
 * connects and stays silent delays nobody, and drops (and logs) any connection that fails it.
 *
 * <p>A pair of ranks may be joined by several connections (the TCP transport gives large messages
 * their own): each rank publishes how many it wants with its endpoint, the pair uses the smaller
 * number, and after the handshake the connecting rank says which of them each connection is.
 */
public final class SocketMesh implements AutoCloseable {
    /** How often the accept loop asks the rendezvous whether a peer it waits for has died. */
    private static final long LIVENESS_CHECK_NANOS = 100_000_000L;

    private static final int SOCKET_BUFFER_BYTES = 4 << 20;
    private static final String PEER_CONTEXT = "panamax-peer-v3 to rank ";
    /** The most connections a pair of ranks may share (the TCP transport's shared one and 8 one-way each way). */
    public static final int MAX_CONNECTIONS_PER_PEER = 17;

    /** Turns the authenticated connections to {@code peer} (in the same order on both sides) into its link. */
    @FunctionalInterface
    public interface LinkFactory {
        Link create(int peer, SocketChannel[] channels) throws IOException;
    }

    /** An authenticated connection from a higher rank: connection {@code index} of the {@code count} it opens. */
    private record Accepted(int peer, int index, int count, SocketChannel channel) {
    }

    private final MutualAuth auth;
    private final String bindAddress;
    private final int connectionsPerPeer;
    private ServerSocketChannel listener;

    /**
     * @param bindAddress where to listen; null: the local address of the connection to the rendezvous
     * @param connectionsPerPeer how many connections this rank wants to each peer (1 to {@link
     *        #MAX_CONNECTIONS_PER_PEER}); a pair uses the smaller of both ranks' numbers
     */
    public SocketMesh(MutualAuth auth, String bindAddress, int connectionsPerPeer) {
        if (connectionsPerPeer < 1 || connectionsPerPeer > MAX_CONNECTIONS_PER_PEER) {
            throw new IllegalArgumentException("connections per peer: 1 to " + MAX_CONNECTIONS_PER_PEER + ", not "
                    + connectionsPerPeer);
        }
        this.auth = auth;
        this.bindAddress = bindAddress;
        this.connectionsPerPeer = connectionsPerPeer;
    }

    /**
     * Opens this rank's listening socket and publishes its endpoint under {@code name}. Called
     * before the ranks meet, so that a peer (or a stranger) connecting early waits in the accept
     * queue rather than being refused.
     */
    public void listen(Rendezvous rendezvous, String name) throws IOException {
        InetAddress local = bindAddress != null ? InetAddress.getByName(bindAddress) : rendezvous.localAddress();
        ServerSocketChannel l = ServerSocketChannel.open();
        try {
            l.bind(new InetSocketAddress(local, 0), rendezvous.size() * connectionsPerPeer);
            rendezvous.publish(name, new Endpoint(local.getHostAddress(),
                    ((InetSocketAddress) l.getLocalAddress()).getPort(), connectionsPerPeer).toString());
        } catch (IOException | RuntimeException e) {
            l.close();
            throw e;
        }
        listener = l;
    }

    /**
     * Connects to every rank in {@code peers} (their endpoints published under {@code name}) and
     * puts each link {@code factory} makes into {@code links}; then stops listening. Closes what it
     * opened that is not a link when it fails.
     */
    public void connect(Rendezvous rendezvous, String name, PeerInfo[] peers, Link[] links,
            LinkFactory factory) throws IOException {
        if (listener == null) {
            throw new IllegalStateException("connect before listen");
        }
        int rank = rendezvous.rank();
        boolean[] isPeer = new boolean[rendezvous.size()];
        for (PeerInfo p : peers) {
            isPeer[p.rank()] = true;
        }
        List<AutoCloseable> opened = new ArrayList<>();
        try {
            long deadline = System.nanoTime() + rendezvous.timeoutNanos();
            connectLower(rendezvous, name, isPeer, links, opened, deadline, factory);
            acceptHigher(rendezvous, isPeer, listener, links, opened, deadline, factory);
            close();
        } catch (IOException | RuntimeException e) {
            close();
            for (int i = opened.size() - 1; i >= 0; i--) {
                try {
                    opened.get(i).close();
                } catch (Exception ignored) {
                    // unwinding a failed connect
                }
            }
            throw e;
        }
    }

    /** Connects to every lower peer, proving who we are and checking that it is the peer. */
    private void connectLower(Rendezvous rendezvous, String name, boolean[] isPeer, Link[] links,
            List<AutoCloseable> opened, long deadline, LinkFactory factory) throws IOException {
        int rank = rendezvous.rank();
        for (int p = 0; p < rank; p++) {
            if (!isPeer[p]) {
                continue;
            }
            Endpoint endpoint = Endpoint.parse(rendezvous.lookup(name, p), p);
            SocketChannel[] channels = new SocketChannel[Math.min(connectionsPerPeer, endpoint.connections())];
            for (int i = 0; i < channels.length; i++) {
                channels[i] = connectOne(rank, p, endpoint, i, channels.length, opened, deadline);
            }
            links[p] = factory.create(p, channels);
            opened.removeAll(List.of(channels)); // the link owns them now
        }
    }

    /** Opens connection {@code index} of {@code count} to the lower rank {@code p}: handshake, then which one it is. */
    private SocketChannel connectOne(int rank, int p, Endpoint endpoint, int index, int count,
            List<AutoCloseable> opened, long deadline) throws IOException {
        SocketChannel ch = SocketChannel.open();
        opened.add(ch);
        tune(ch);
        ch.connect(new InetSocketAddress(endpoint.host(), endpoint.port()));
        // The peer answers once it is done connecting to the ranks below it: wait up to the deadline.
        ch.socket().setSoTimeout((int) Math.max(1,
                Math.min(Integer.MAX_VALUE, (deadline - System.nanoTime()) / 1_000_000)));
        DataOutputStream out = new DataOutputStream(ch.socket().getOutputStream());
        try {
            auth.connect(new DataInputStream(ch.socket().getInputStream()), out, PEER_CONTEXT + p, rank);
        } catch (MutualAuth.Rejected e) {
            throw new CollectiveException("rank " + rank + ": rank " + p + " at " + endpoint.address()
                    + " rejected this rank's TCP connection: wrong PANAMAX_SECRET?", e);
        } catch (MutualAuth.Unproven e) {
            throw new CollectiveException("rank " + rank + ": the endpoint of rank " + p + " at " + endpoint.address()
                    + " could not prove it holds the job's secret: " + e.getMessage(), e);
        } catch (SocketTimeoutException e) {
            throw new CollectiveTimeoutException("rank " + rank + ": rank " + p + " at " + endpoint.address()
                    + " did not answer the TCP handshake");
        }
        out.writeInt(index);
        out.writeInt(count);
        out.flush();
        ch.socket().setSoTimeout(0);
        return ch;
    }

    /** Accepts every higher peer; each handshake runs on its own thread under a read timeout. */
    private void acceptHigher(Rendezvous rendezvous, boolean[] isPeer, ServerSocketChannel listener, Link[] links,
            List<AutoCloseable> opened, long deadline, LinkFactory factory) throws IOException {
        int rank = rendezvous.rank();
        long nextLivenessCheck = System.nanoTime() + LIVENESS_CHECK_NANOS;
        int expected = 0;
        for (int p = rank + 1; p < isPeer.length; p++) {
            if (isPeer[p]) {
                expected++;
            }
        }
        BlockingQueue<Accepted> proven = new LinkedBlockingQueue<>();
        SocketChannel[][] arrived = new SocketChannel[isPeer.length][];
        listener.configureBlocking(false);
        while (expected > 0) {
            SocketChannel ch = listener.accept();
            if (ch != null) {
                opened.add(ch);
                Thread.ofPlatform().daemon().name("panamax-handshake-" + rank)
                        .start(() -> handshake(rank, isPeer, ch, proven));
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
                long now = System.nanoTime();
                if (now - deadline > 0) {
                    throw new CollectiveTimeoutException("rank " + rank
                            + ": timed out waiting for TCP connections from higher ranks");
                }
                if (now - nextLivenessCheck > 0) {
                    // A peer that died after publishing its endpoint never connects: do not wait for the timeout.
                    nextLivenessCheck = now + LIVENESS_CHECK_NANOS;
                    for (int p = rank + 1; p < isPeer.length; p++) {
                        if (isPeer[p] && links[p] == null && rendezvous.failed(p)) {
                            throw new PeerFailedException(p, "rank " + rank + ": rank " + p
                                    + " died before it connected over TCP", null);
                        }
                    }
                }
                continue;
            }
            SocketChannel[] channels = arrived[a.peer()];
            if (channels == null) {
                channels = new SocketChannel[a.count()];
                arrived[a.peer()] = channels;
            }
            if (links[a.peer()] != null || a.count() != channels.length || channels[a.index()] != null) {
                // A second proven connection in the same place, or one of a different set: keep the first.
                MutualAuth.LOG.log(System.Logger.Level.WARNING, "rank " + rank + ": dropped a TCP connection from rank "
                        + a.peer() + " (connection " + a.index() + " of " + a.count() + ") that it already has");
                a.channel().close();
                continue;
            }
            channels[a.index()] = a.channel();
            if (Arrays.stream(channels).allMatch(Objects::nonNull)) {
                links[a.peer()] = factory.create(a.peer(), channels);
                opened.removeAll(List.of(channels)); // the link owns them now
                expected--;
            }
        }
    }

    /** The accepting side of one connection: queues it when it proves to be a higher peer, else logs and closes it. */
    private void handshake(int rank, boolean[] isPeer, SocketChannel ch, BlockingQueue<Accepted> proven) {
        Object remote = "?";
        try {
            remote = ch.getRemoteAddress();
            ch.configureBlocking(true);
            tune(ch);
            ch.socket().setSoTimeout(MutualAuth.HANDSHAKE_TIMEOUT_MILLIS);
            DataInputStream in = new DataInputStream(ch.socket().getInputStream());
            int p = auth.accept(in, new DataOutputStream(ch.socket().getOutputStream()),
                    PEER_CONTEXT + rank, claim -> claim > rank && claim < isPeer.length && isPeer[claim]);
            int index = in.readInt();
            int count = in.readInt();
            if (count < 1 || count > connectionsPerPeer || index < 0 || index >= count) {
                throw new IOException("rank " + p + " numbered its connection " + index + " of " + count
                        + ", but this rank takes 1 to " + connectionsPerPeer);
            }
            ch.socket().setSoTimeout(0);
            proven.add(new Accepted(p, index, count, ch));
        } catch (IOException | RuntimeException e) {
            if (ch.isOpen()) {
                MutualAuth.LOG.log(System.Logger.Level.WARNING,
                        "rank " + rank + ": rejected a TCP connection from " + remote + ": "
                        + (e instanceof IOException io ? MutualAuth.reason(io) : e.toString()));
            }
            try {
                ch.close();
            } catch (IOException ignored) {
                // dropping it
            }
        }
    }

    /** Stops listening (idempotent). */
    @Override
    public void close() {
        ServerSocketChannel l = listener;
        listener = null;
        if (l != null) {
            try {
                l.close();
            } catch (IOException ignored) {
                // closing
            }
        }
    }

    /** What a rank publishes: where it listens and how many connections it wants per peer. */
    private record Endpoint(String host, int port, int connections) {
        /** {@code host:port/connections}; an IPv6 host has colons, so the port follows the last one. */
        @Override
        public String toString() {
            return address() + "/" + connections;
        }

        String address() {
            return host + ":" + port;
        }

        static Endpoint parse(String published, int rank) {
            int slash = published.lastIndexOf('/');
            int colon = published.lastIndexOf(':', slash);
            try {
                return new Endpoint(published.substring(0, colon),
                        Integer.parseInt(published.substring(colon + 1, slash)),
                        Integer.parseInt(published.substring(slash + 1)));
            } catch (RuntimeException e) {
                throw new CollectiveException("rank " + rank + " published the TCP endpoint '" + published
                        + "', not host:port/connections (a rank of another Panamax version?)", e);
            }
        }
    }

    private static void tune(SocketChannel ch) throws IOException {
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        ch.setOption(StandardSocketOptions.SO_SNDBUF, SOCKET_BUFFER_BYTES);
        ch.setOption(StandardSocketOptions.SO_RCVBUF, SOCKET_BUFFER_BYTES);
    }
}
