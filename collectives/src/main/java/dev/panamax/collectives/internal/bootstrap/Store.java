package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntPredicate;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The rendezvous store: a small key-value server run by rank 0, and its client. Ranks publish
 * their endpoints with {@code set} and read the others' with {@code get}, which waits until the key
 * exists. Values are strings; the protocol is length-prefixed frames over one TCP connection per
 * rank. Only used while connecting, so it favours simplicity over speed.
 *
 * <p>Every connection starts with the mutual challenge-response of {@link Auth}: the client proves
 * it holds the job's secret ({@code PANAMAX_SECRET}) before the server answers anything, and the
 * server proves it too before the client trusts what it reads. The server listens only on the
 * master address it is given (never the wildcard unless that is what it is given), and drops,
 * logs and forgets a connection that fails the handshake while serving the others.
 */
final class Store {
    private static final int OP_SET = 1;
    private static final int OP_GET = 2;
    private static final int OP_ADD = 3;
    private static final int OP_BYE = 4;

    private Store() {
    }

    /** The server side, run by rank 0. */
    static final class Server implements AutoCloseable {
        private final ServerSocket socket;
        private final Auth auth;
        private final int handshakeMillis;
        private final System.Logger log;
        private final Map<String, String> data = new HashMap<>();
        private final Map<Socket, Boolean> clients = new ConcurrentHashMap<>();
        private final Thread acceptor;
        private volatile boolean closed;

        Server(String address, int port, Auth auth) {
            this(address, port, auth, Auth.HANDSHAKE_TIMEOUT_MILLIS, Auth.LOG);
        }

        /**
         * Listens on {@code address:port} only: the address is resolved and bound as given, so a
         * configured interface never becomes the wildcard. {@code handshakeMillis} bounds how long
         * a connection may take to prove itself; rejections are logged to {@code log}.
         */
        Server(String address, int port, Auth auth, int handshakeMillis, System.Logger log) {
            this.auth = auth;
            this.handshakeMillis = handshakeMillis;
            this.log = log;
            try {
                socket = new ServerSocket();
                socket.setReuseAddress(true);
                socket.bind(new InetSocketAddress(address, port), 128);
            } catch (IOException | IllegalArgumentException e) {
                throw new CollectiveException("rank 0 cannot listen on " + address + ":" + port + " for the rendezvous store: " + e.getMessage(), e);
            }
            if (socket.getInetAddress().isAnyLocalAddress()) {
                log.log(System.Logger.Level.WARNING, "the rendezvous store listens on every interface (master address " + address
                        + "); set PANAMAX_MASTER_ADDR to the address of one interface to restrict it");
            }
            acceptor = Thread.ofPlatform().daemon().name("panamax-store").start(this::acceptLoop);
        }

        int port() {
            return socket.getLocalPort();
        }

        /** The local address the server is bound to. */
        java.net.InetAddress address() {
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
                    auth.accept(in, out, Auth.STORE_CONTEXT, rank -> rank >= 0);
                } catch (IOException e) {
                    if (!closed) {
                        log.log(System.Logger.Level.WARNING, "rendezvous store: rejected a connection from " + remote + ": " + Auth.reason(e));
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

    /** A rank's connection to the store. Not thread-safe. */
    static final class Client implements AutoCloseable {
        private final Socket socket;
        private final DataInputStream in;
        private final DataOutputStream out;
        private final String where;

        private Client(Socket socket, String where) throws IOException {
            this.socket = socket;
            this.where = where;
            this.in = new DataInputStream(socket.getInputStream());
            this.out = new DataOutputStream(socket.getOutputStream());
        }

        /**
         * Connects, retrying until the server is up or {@code timeoutNanos} has passed, and runs the
         * handshake: fails at once when the server rejects this rank's proof or cannot prove the
         * secret itself.
         */
        static Client connect(String address, int port, long timeoutNanos, int rank, Auth auth) {
            long deadline = System.nanoTime() + timeoutNanos;
            String where = address + ":" + port;
            IOException last = null;
            long sleepMillis = 5;
            while (System.nanoTime() - deadline < 0) {
                Socket s = new Socket();
                try {
                    int remaining = (int) Math.max(1, Math.min(Integer.MAX_VALUE, (deadline - System.nanoTime()) / 1_000_000));
                    s.connect(new InetSocketAddress(address, port), Math.min(remaining, 5000));
                    s.setTcpNoDelay(true);
                    remaining = (int) Math.max(1, Math.min(Integer.MAX_VALUE, (deadline - System.nanoTime()) / 1_000_000));
                    s.setSoTimeout(Math.min(remaining, Auth.HANDSHAKE_TIMEOUT_MILLIS));
                    Client c = new Client(s, where);
                    auth.connect(c.in, c.out, Auth.STORE_CONTEXT, rank);
                    s.setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, timeoutNanos / 1_000_000)));
                    return c;
                } catch (Auth.Rejected e) {
                    closeQuietly(s);
                    throw new CollectiveException("rank " + rank + ": the store at " + where + " rejected this rank: wrong PANAMAX_SECRET?", e);
                } catch (Auth.Unproven e) {
                    closeQuietly(s);
                    throw new CollectiveException("rank " + rank + ": the store at " + where + " could not prove it holds the job's secret "
                            + "(wrong PANAMAX_SECRET on rank 0, or not a Panamax store?): " + e.getMessage(), e);
                } catch (IOException e) {
                    last = e;
                    try {
                        s.close();
                    } catch (IOException ignored) {
                        // retrying
                    }
                    try {
                        Thread.sleep(sleepMillis);
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        throw new CollectiveException("interrupted while connecting to the rendezvous store at " + where);
                    }
                    sleepMillis = Math.min(sleepMillis * 2, 200);
                }
            }
            throw new CollectiveTimeoutException("rank " + rank + " could not reach the rendezvous store at " + where + " within "
                    + timeoutNanos / 1_000_000_000.0 + " s (is rank 0 running, PANAMAX_MASTER_ADDR/PORT right?): "
                    + (last == null ? "timed out" : last.getMessage()));
        }

        /** The local address of the connection to the server: the address this process uses to reach the master. */
        java.net.InetAddress localAddress() {
            return socket.getLocalAddress();
        }

        void set(String key, String value) {
            call(() -> {
                out.writeInt(OP_SET);
                writeString(out, key);
                writeString(out, value);
                out.flush();
                in.readInt();
                return null;
            }, "set " + key);
        }

        /** Waits until {@code key} exists and returns its value. */
        String get(String key) {
            return call(() -> {
                out.writeInt(OP_GET);
                writeString(out, key);
                out.flush();
                return readString(in);
            }, "get " + key);
        }

        long add(String key, long delta) {
            return Long.parseLong(call(() -> {
                out.writeInt(OP_ADD);
                writeString(out, key);
                writeString(out, Long.toString(delta));
                out.flush();
                return readString(in);
            }, "add " + key));
        }

        /** Waits until all {@code size} ranks have called it with the same {@code name}. */
        void barrier(String name, int size) {
            if (add("barrier/" + name, 1) == size) {
                set("barrier/" + name + "/done", "1");
            }
            get("barrier/" + name + "/done");
        }

        private interface Call<T> {
            T run() throws IOException;
        }

        private <T> T call(Call<T> c, String what) {
            try {
                return c.run();
            } catch (SocketTimeoutException e) {
                throw new CollectiveTimeoutException("rendezvous store at " + where + ": '" + what + "' timed out (a rank did not join?)");
            } catch (EOFException e) {
                throw new CollectiveException("rendezvous store at " + where + " closed the connection during '" + what + "' (rank 0 gone?)", e);
            } catch (IOException e) {
                throw new CollectiveException("rendezvous store at " + where + ": '" + what + "' failed: " + e.getMessage(), e);
            }
        }

        @Override
        public void close() {
            try {
                out.writeInt(OP_BYE);
                writeString(out, "");
                out.flush();
            } catch (IOException ignored) {
                // the server may be gone
            }
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing
            }
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // failing anyway
        }
    }

    /**
     * The job's secret and the mutual HMAC-SHA256 challenge-response run at the start of every
     * store connection and every rank-to-rank TCP connection. On the wire, big-endian:
     * <pre>
     *   server -> client: MAGIC (int), server nonce (32 bytes)
     *   client -> server: claim (int: the client's rank), client nonce (32 bytes),
     *                     HMAC(key, context "/client" || sN || cN || claim) (32 bytes)
     *   server -> client: 0 (byte), HMAC(key, context "/server" || sN || cN || claim) (32 bytes)
     *                  or 1 (byte) and close: rejected
     * </pre>
     * Both sides draw fresh nonces from {@link SecureRandom}, so a recorded exchange cannot be
     * replayed; the two directions use different labels, so a proof cannot be reflected back; MACs
     * are compared with {@link MessageDigest#isEqual} (constant time). The key is the UTF-8 bytes of
     * {@code PANAMAX_SECRET}; with no secret set a fixed public key is used (the job is then
     * unauthenticated, and a WARNING says so once per JVM).
     */
    static final class Auth {
        /** Secrets shorter than this are accepted with a warning. */
        static final int MIN_SECRET_CHARS = 16;
        static final int MAGIC = 0x504D5841; // "PMXA"
        static final int NONCE_BYTES = 32;
        static final int MAC_BYTES = 32;
        /** How long a connection may take to prove itself to the side that accepted it. */
        static final int HANDSHAKE_TIMEOUT_MILLIS = 10_000;
        static final String STORE_CONTEXT = "panamax-store-v1";
        static final System.Logger LOG = System.getLogger("dev.panamax.collectives.auth");

        private static final byte[] NO_SECRET_KEY = "panamax: no PANAMAX_SECRET set".getBytes(StandardCharsets.UTF_8);
        private static final AtomicBoolean WARNED_UNSET = new AtomicBoolean();
        private static final AtomicBoolean WARNED_SHORT = new AtomicBoolean();
        private static final SecureRandom RANDOM = new SecureRandom();

        private final SecretKeySpec key;

        private Auth(byte[] key) {
            this.key = new SecretKeySpec(key, "HmacSHA256");
        }

        /** The key for {@code secret}; null or empty means none (logged once as a WARNING). */
        static Auth of(String secret) {
            if (secret == null || secret.isEmpty()) {
                if (WARNED_UNSET.compareAndSet(false, true)) {
                    LOG.log(System.Logger.Level.WARNING, "PANAMAX_SECRET is not set: this job is unauthenticated, anyone who can reach "
                            + "the rendezvous store or a rank's TCP port can join it (scripts/panamax-run and panamax-perf set one)");
                }
                return new Auth(NO_SECRET_KEY);
            }
            if (secret.length() < MIN_SECRET_CHARS && WARNED_SHORT.compareAndSet(false, true)) {
                LOG.log(System.Logger.Level.WARNING, "PANAMAX_SECRET has " + secret.length() + " characters; use at least "
                        + MIN_SECRET_CHARS + " (for example 32 hex digits from /dev/urandom)");
            }
            return new Auth(secret.getBytes(StandardCharsets.UTF_8));
        }

        /** The other side told us our proof was wrong. */
        static final class Rejected extends IOException {
            Rejected(String message) {
                super(message);
            }
        }

        /** The other side did not prove it holds the secret, or does not speak this protocol. */
        static final class Unproven extends IOException {
            Unproven(String message) {
                super(message);
            }
        }

        /** Why a handshake failed, for the log. */
        static String reason(IOException e) {
            if (e instanceof SocketTimeoutException) {
                return "no handshake within the time limit";
            }
            if (e instanceof EOFException) {
                return "closed the connection during the handshake";
            }
            return e.getMessage() == null ? e.toString() : e.getMessage();
        }

        /**
         * The accepting side: challenges, checks the claim with {@code claimOk} and the proof, and
         * proves itself. Returns the claim (the connecting rank). On a bad proof or claim it tells
         * the peer and throws {@link Unproven}; the caller closes the connection.
         */
        int accept(DataInputStream in, DataOutputStream out, String context, IntPredicate claimOk) throws IOException {
            byte[] serverNonce = nonce();
            out.writeInt(MAGIC);
            out.write(serverNonce);
            out.flush();
            int claim = in.readInt();
            byte[] clientNonce = in.readNBytes(NONCE_BYTES);
            byte[] proof = in.readNBytes(MAC_BYTES);
            if (clientNonce.length != NONCE_BYTES || proof.length != MAC_BYTES) {
                throw new EOFException();
            }
            boolean proven = MessageDigest.isEqual(proof, mac(context + "/client", serverNonce, clientNonce, claim));
            if (!proven || !claimOk.test(claim)) {
                try {
                    out.writeByte(1);
                    out.flush();
                } catch (IOException ignored) {
                    // it is being dropped anyway
                }
                throw new Unproven(proven ? "claims rank " + claim + ", which may not connect here"
                        : "wrong proof of the job's secret (claims rank " + claim + ")");
            }
            out.writeByte(0);
            out.write(mac(context + "/server", serverNonce, clientNonce, claim));
            out.flush();
            return claim;
        }

        /**
         * The connecting side, claiming to be {@code claim}: answers the challenge and checks the
         * other side's proof. Throws {@link Rejected} when the other side refuses ours and
         * {@link Unproven} when the other side cannot prove the secret.
         */
        void connect(DataInputStream in, DataOutputStream out, String context, int claim) throws IOException {
            int magic = in.readInt();
            if (magic != MAGIC) {
                throw new Unproven("it does not speak the Panamax handshake");
            }
            byte[] serverNonce = in.readNBytes(NONCE_BYTES);
            if (serverNonce.length != NONCE_BYTES) {
                throw new EOFException();
            }
            byte[] clientNonce = nonce();
            out.writeInt(claim);
            out.write(clientNonce);
            out.write(mac(context + "/client", serverNonce, clientNonce, claim));
            out.flush();
            int status = in.read();
            if (status == 1) {
                throw new Rejected("rejected");
            }
            if (status != 0) {
                throw status < 0 ? new EOFException() : new Unproven("it does not speak the Panamax handshake");
            }
            byte[] proof = in.readNBytes(MAC_BYTES);
            if (proof.length != MAC_BYTES) {
                throw new EOFException();
            }
            if (!MessageDigest.isEqual(proof, mac(context + "/server", serverNonce, clientNonce, claim))) {
                throw new Unproven("its proof of the job's secret is wrong");
            }
        }

        private byte[] mac(String label, byte[] serverNonce, byte[] clientNonce, int claim) {
            try {
                Mac m = Mac.getInstance("HmacSHA256");
                m.init(key);
                m.update(label.getBytes(StandardCharsets.UTF_8));
                m.update((byte) 0);
                m.update(serverNonce);
                m.update(clientNonce);
                m.update(new byte[] {(byte) (claim >>> 24), (byte) (claim >>> 16), (byte) (claim >>> 8), (byte) claim});
                return m.doFinal();
            } catch (GeneralSecurityException e) {
                throw new IllegalStateException("HmacSHA256 is not available", e);
            }
        }

        private static byte[] nonce() {
            byte[] b = new byte[NONCE_BYTES];
            RANDOM.nextBytes(b);
            return b;
        }
    }

    private static final int MAX_STRING = 1 << 20;

    private static String readString(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > MAX_STRING) {
            throw new IOException("bad frame length " + n);
        }
        byte[] b = in.readNBytes(n);
        if (b.length != n) {
            throw new EOFException();
        }
        return new String(b, StandardCharsets.UTF_8);
    }

    private static void writeString(DataOutputStream out, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length);
        out.write(b);
    }
}
