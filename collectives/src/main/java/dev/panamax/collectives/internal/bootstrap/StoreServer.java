package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.internal.auth.MutualAuth;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketAddress;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_ADD;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_BYE;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_GET;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_SET;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.readString;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.writeString;

/**
 * The rendezvous store: a small key-value server run by rank 0 ({@link StoreClient} is the other
 * end). Ranks publish
 * their endpoints with {@code set} and read the others' with {@code get}, which waits until the key
 * exists. Values are strings; the protocol is length-prefixed frames over one TCP connection per
 * rank. Only used while connecting, so it favours simplicity over speed.
 *
 * <p>Every connection starts with the mutual challenge-response of {@link MutualAuth}: the client proves
 * it holds the job's secret ({@code PANAMAX_SECRET}) before the server answers anything, and the
 * server proves it too before the client trusts what it reads. The server listens only on the
 * master address it is given (never the wildcard unless that is what it is given), and drops,
 * logs and forgets a connection that fails the handshake while serving the others.
 */
public final class StoreServer implements AutoCloseable {
    private final ServerSocket socket;
    private final MutualAuth auth;
    private final int handshakeMillis;
    private final System.Logger log;
    private final Map<String, String> data = new HashMap<>();
    private final Map<Socket, Boolean> clients = new ConcurrentHashMap<>();
    private final Thread acceptor;
    private volatile boolean closed;

    public StoreServer(String address, int port, MutualAuth auth) {
        this(address, port, auth, MutualAuth.HANDSHAKE_TIMEOUT_MILLIS, MutualAuth.LOG);
    }

    /**
     * Listens on {@code address:port} only: the address is resolved and bound as given, so a
     * configured interface never becomes the wildcard. {@code handshakeMillis} bounds how long
     * a connection may take to prove itself; rejections are logged to {@code log}.
     */
    StoreServer(String address, int port, MutualAuth auth, int handshakeMillis, System.Logger log) {
        this.auth = auth;
        this.handshakeMillis = handshakeMillis;
        this.log = log;
        try {
            socket = new ServerSocket();
            socket.setReuseAddress(true);
            socket.bind(new InetSocketAddress(address, port), 128);
        } catch (IOException | IllegalArgumentException e) {
            throw new CollectiveException("rank 0 cannot listen on " + address + ":" + port
                    + " for the rendezvous store: " + e.getMessage(), e);
        }
        if (socket.getInetAddress().isAnyLocalAddress()) {
            log.log(System.Logger.Level.WARNING,
                    "the rendezvous store listens on every interface (master address " + address
                    + "); set PANAMAX_MASTER_ADDR to the address of one interface to restrict it");
        }
        acceptor = Thread.ofPlatform().daemon().name("panamax-store").start(this::acceptLoop);
    }

    int port() {
        return socket.getLocalPort();
    }

    /** The local address the server is bound to. */
    InetAddress address() {
        return socket.getInetAddress();
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket s = socket.accept();
                s.setTcpNoDelay(true);
                clients.put(s, Boolean.TRUE);
                Thread.ofPlatform().daemon().name("panamax-store-client").start(() -> serve(s));
            } catch (IOException e) {
                if (!closed) {
                    continue;
                }
                return;
            }
        }
    }

    private void serve(Socket s) {
        SocketAddress remote = s.getRemoteSocketAddress();
        try (s; DataInputStream in = new DataInputStream(s.getInputStream());
             DataOutputStream out = new DataOutputStream(s.getOutputStream())) {
            // A stranger that sends nothing costs this thread handshakeMillis, never the others.
            s.setSoTimeout(handshakeMillis);
            try {
                auth.accept(in, out, MutualAuth.STORE_CONTEXT, rank -> rank >= 0);
            } catch (IOException e) {
                if (!closed) {
                    log.log(System.Logger.Level.WARNING,
                            "rendezvous store: rejected a connection from " + remote + ": " + MutualAuth.reason(e));
                }
                return;
            }
            s.setSoTimeout(0); // a proven rank may wait as long as the job takes
            while (true) {
                int op = in.readInt();
                String key = readString(in);
                switch (op) {
                    case OP_SET -> {
                        String value = readString(in);
                        synchronized (data) {
                            data.put(key, value);
                            data.notifyAll();
                        }
                        out.writeInt(0);
                    }
                    case OP_GET -> {
                        String value;
                        synchronized (data) {
                            while ((value = data.get(key)) == null && !closed) {
                                data.wait(1000);
                            }
                        }
                        if (value == null) {
                            return;
                        }
                        writeString(out, value);
                    }
                    case OP_ADD -> {
                        long delta = Long.parseLong(readString(in));
                        long now;
                        synchronized (data) {
                            now = Long.parseLong(data.getOrDefault(key, "0")) + delta;
                            data.put(key, Long.toString(now));
                            data.notifyAll();
                        }
                        writeString(out, Long.toString(now));
                    }
                    case OP_BYE -> {
                        return;
                    }
                    default -> {
                        return; // not our protocol: drop the connection
                    }
                }
                out.flush();
            }
        } catch (IOException | InterruptedException | RuntimeException e) {
            // the client went away; nothing to clean up beyond the socket
        } finally {
            clients.remove(s);
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing
        }
        for (Socket s : clients.keySet()) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closing
            }
        }
        synchronized (data) {
            data.notifyAll();
        }
    }
}
