package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.internal.auth.MutualAuth;
import dev.panamax.collectives.internal.elastic.AgreementState;
import dev.panamax.collectives.internal.elastic.Agreements;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketAddress;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_ADD;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_AGREE;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_FAILED;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_GET_FROM;
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
 *
 * <p>It is also the coordinator of agreements ({@code Communicator.agree} and {@code shrink}): a
 * member (the rank a connection proved, its member id) is alive while it holds a connection, and
 * failed from the moment its last connection ends (its process died, or it closed every
 * communicator); agreements decide by {@link AgreementState} under the same lock as the data.
 */
public final class StoreServer implements AutoCloseable {
    private final ServerSocket socket;
    private final MutualAuth auth;
    private final int handshakeMillis;
    private final System.Logger log;
    private final Map<String, String> data = new HashMap<>();
    private final Map<Socket, Boolean> clients = new ConcurrentHashMap<>();
    /** Requests being answered now: close() lets them finish (a decision made is a decision told). */
    private final AtomicInteger answering = new AtomicInteger();
    /** Open connections per member id; guarded by {@code data}. */
    private final Map<Integer, Integer> connections = new HashMap<>();
    /** The agreements, and the members whose last connection ended; guarded by {@code data}. */
    private final Agreements agreements = new Agreements(data);
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
        int member = -1;
        try (s; DataInputStream in = new DataInputStream(s.getInputStream());
             DataOutputStream out = new DataOutputStream(s.getOutputStream())) {
            // A stranger that sends nothing costs this thread handshakeMillis, never the others.
            s.setSoTimeout(handshakeMillis);
            try {
                member = auth.accept(in, out, MutualAuth.STORE_CONTEXT, rank -> rank >= 0);
            } catch (IOException e) {
                if (!closed) {
                    log.log(System.Logger.Level.WARNING,
                            "rendezvous store: rejected a connection from " + remote + ": " + MutualAuth.reason(e));
                }
                return;
            }
            s.setSoTimeout(0); // a proven rank may wait as long as the job takes
            joined(member);
            while (true) {
                int op = in.readInt();
                answering.incrementAndGet();
                try {
                    if (!answer(op, in, out)) {
                        return;
                    }
                } finally {
                    answering.decrementAndGet();
                }
            }
        } catch (IOException | InterruptedException | RuntimeException e) {
            // the client went away; nothing to clean up beyond the socket
        } finally {
            clients.remove(s);
            if (member >= 0) {
                left(member);
            }
        }
    }

    /** Reads and answers one request ({@code op} read already); false when the connection is to end. */
    private boolean answer(int op, DataInputStream in, DataOutputStream out)
            throws IOException, InterruptedException {
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
                    return false;
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
            case OP_AGREE -> writeString(out, agree(key, readString(in)));
            case OP_FAILED -> {
                int who = Integer.parseInt(readString(in));
                boolean gone;
                synchronized (data) {
                    gone = agreements.hasFailed(who);
                }
                writeString(out, gone ? "1" : "0");
            }
            case OP_GET_FROM -> {
                int from = Integer.parseInt(readString(in));
                String value;
                synchronized (data) {
                    while ((value = data.get(key)) == null && !agreements.hasFailed(from) && !closed) {
                        data.wait(1000);
                    }
                }
                if (value == null && closed) {
                    return false;
                }
                writeString(out, value == null ? "0" : "1" + value);
            }
            default -> {
                return false; // not our protocol: drop the connection
            }
        }
        out.flush();
        return true;
    }

    private void joined(int member) {
        synchronized (data) {
            connections.merge(member, 1, Integer::sum);
            agreements.memberBack(member); // a fresh connection under the same rank: alive for later agreements
        }
    }

    /** A connection of {@code member} ended: at its last one, the member has failed in every agreement. */
    private void left(int member) {
        synchronized (data) {
            if (connections.merge(member, -1, Integer::sum) > 0) {
                return;
            }
            connections.remove(member);
            agreements.memberFailed(member);
        }
    }

    /**
     * Contributes to agreement {@code instance} ({@code request}: "self flags timeoutMillis members",
     * and "nowait" to return "pending" at once) and waits for its decision: "flags failed,failed,...".
     * The first contribution sets the members
     * and the deadline, after which the members that have not contributed count as failed.
     */
    private String agree(String instance, String request) throws InterruptedException {
        String[] f = request.split(" ", -1);
        int self = Integer.parseInt(f[0]);
        long flags = Long.parseUnsignedLong(f[1], 16);
        long timeoutNanos = Long.parseLong(f[2]) * 1_000_000L;
        int[] members = Arrays.stream(f[3].split(",")).mapToInt(Integer::parseInt).toArray();
        boolean wait = !(f.length > 4 && f[4].equals("nowait"));
        synchronized (data) {
            AgreementState.Decision d;
            try {
                d = agreements.contribute(instance, members, self, flags, timeoutNanos, wait, () -> closed);
            } catch (IllegalArgumentException e) {
                return "error " + e.getMessage();
            }
            if (!wait) {
                return "pending";
            }
            if (d == null) {
                return "error the store is closing";
            }
            StringBuilder b = new StringBuilder(Long.toHexString(d.flags())).append(' ');
            for (int i = 0; i < d.failedMembers().length; i++) {
                b.append(i == 0 ? "" : ",").append(d.failedMembers()[i]);
            }
            return b.toString();
        }
    }

    /**
     * Stops listening, ends the waits (a get of a missing key, an undecided agreement), gives the requests
     * being answered up to a second to send their answers (a member that contributed to a decided agreement
     * hears the decision even when the store's host is leaving), then closes every connection.
     */
    @Override
    public void close() {
        closed = true;
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing
        }
        synchronized (data) {
            data.notifyAll();
        }
        long deadline = System.nanoTime() + 1_000_000_000L;
        while (answering.get() > 0 && System.nanoTime() - deadline < 0) {
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        for (Socket s : clients.keySet()) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closing
            }
        }
    }
}
