package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.LaunchConfig;
import dev.panamax.collectives.Panamax;
import dev.panamax.collectives.TransportKind;
import dev.panamax.collectives.internal.auth.MutualAuth;
import org.junit.jupiter.api.Test;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.ResourceBundle;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import java.text.MessageFormat;
import java.util.Random;

/** Bootstrap authentication: the store and the rank-to-rank TCP handshake admit only holders of the job's secret. */
class StoreAuthTest {
    private static final String SECRET = "0123456789abcdef0123456789abcdef";
    private static final long TIMEOUT = Duration.ofSeconds(20).toNanos();

    /** A System.Logger that keeps its lines. */
    static final class Recorder implements System.Logger {
        final List<String> lines = new CopyOnWriteArrayList<>();

        @Override
        public String getName() {
            return "test";
        }

        @Override
        public boolean isLoggable(Level level) {
            return true;
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String msg, Throwable thrown) {
            lines.add(level + " " + msg);
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String format, Object... params) {
            lines.add(level + " " + MessageFormat.format(format, params));
        }

        boolean waitFor(String fragment, long millis) throws InterruptedException {
            long end = System.nanoTime() + millis * 1_000_000;
            while (System.nanoTime() < end) {
                if (lines.stream().anyMatch(l -> l.contains(fragment))) {
                    return true;
                }
                Thread.sleep(10);
            }
            return false;
        }
    }

    private static StoreServer server(Recorder log, int handshakeMillis) {
        return new StoreServer("127.0.0.1", 0, MutualAuth.of(SECRET), handshakeMillis, log);
    }

    @Test
    void theRightSecretConnects() {
        Recorder log = new Recorder();
        try (StoreServer server = server(log, 2000);
             StoreClient a = StoreClient.connect("127.0.0.1", server.port(), TIMEOUT, 0, MutualAuth.of(SECRET));
             StoreClient b = StoreClient.connect("127.0.0.1", server.port(), TIMEOUT, 1, MutualAuth.of(SECRET))) {
            a.set("k", "v");
            assertEquals("v", b.get("k"));
            assertEquals(2, a.add("n", 2));
        }
        assertTrue(log.lines.isEmpty(), log.lines::toString);
    }

    @Test
    void aWrongSecretFailsOnThatRankWithAClearMessage() throws Exception {
        Recorder log = new Recorder();
        try (StoreServer server = server(log, 2000)) {
            long start = System.nanoTime();
            CollectiveException e = assertThrows(CollectiveException.class,
                    () -> StoreClient.connect("127.0.0.1", server.port(), TIMEOUT, 3,
                            MutualAuth.of("another secret of the same length")));
            assertTrue((System.nanoTime() - start) / 1e9 < 5, "it should fail at once, not at the timeout");
            assertTrue(e.getMessage().contains("rank 3: the store at 127.0.0.1:" + server.port()
                    + " rejected this rank: wrong PANAMAX_SECRET?"),
                    e::getMessage);
            assertTrue(log.waitFor("wrong proof", 2000), log.lines::toString);
            assertTrue(log.lines.get(0).startsWith("WARNING rendezvous store: rejected a connection from /127.0.0.1:"),
                    log.lines::toString);
            // the server goes on serving ranks that hold the secret
            try (StoreClient ok = StoreClient.connect("127.0.0.1", server.port(), TIMEOUT, 0, MutualAuth.of(SECRET))) {
                ok.set("a", "b");
                assertEquals("b", ok.get("a"));
            }
        }
    }

    @Test
    void aRankWithoutTheSecretIsRejectedByAStoreWithOne() {
        try (StoreServer server = server(new Recorder(), 2000)) {
            CollectiveException e = assertThrows(CollectiveException.class,
                    () -> StoreClient.connect("127.0.0.1", server.port(), TIMEOUT, 1, MutualAuth.of(null)));
            assertTrue(e.getMessage().contains("rejected this rank: wrong PANAMAX_SECRET?"), e::getMessage);
        }
    }

    @Test
    void aServerThatCannotProveTheSecretIsRefused() throws Exception {
        // Speaks the protocol, accepts every proof, but answers with a proof made without the secret.
        try (ServerSocket fake = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            CompletableFuture<Void> served = CompletableFuture.runAsync(() -> {
                try (Socket s = fake.accept()) {
                    DataOutputStream out = new DataOutputStream(s.getOutputStream());
                    DataInputStream in = new DataInputStream(s.getInputStream());
                    out.writeInt(MutualAuth.MAGIC);
                    out.write(new byte[MutualAuth.NONCE_BYTES]);
                    out.flush();
                    in.readFully(new byte[4 + MutualAuth.NONCE_BYTES + MutualAuth.MAC_BYTES]);
                    out.writeByte(0);
                    out.write(new byte[MutualAuth.MAC_BYTES]);
                    out.flush();
                    in.read(); // until the client hangs up
                } catch (IOException ignored) {
                    // the client hung up
                }
            });
            CollectiveException e = assertThrows(CollectiveException.class,
                    () -> StoreClient.connect("127.0.0.1", fake.getLocalPort(), TIMEOUT, 1, MutualAuth.of(SECRET)));
            assertTrue(e.getMessage().contains("could not prove it holds the job's secret"), e::getMessage);
            assertTrue(e.getMessage().contains("proof of the job's secret is wrong"), e::getMessage);
            served.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void somethingElseListeningOnThePortIsRefused() throws Exception {
        try (ServerSocket other = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            CompletableFuture<Void> served = CompletableFuture.runAsync(() -> {
                try (Socket s = other.accept()) {
                    s.getOutputStream().write("HTTP/1.1 400 Bad Request\r\n\r\n".getBytes());
                    s.getInputStream().read();
                } catch (IOException ignored) {
                    // the client hung up
                }
            });
            CollectiveException e = assertThrows(CollectiveException.class,
                    () -> StoreClient.connect("127.0.0.1", other.getLocalPort(), TIMEOUT, 1, MutualAuth.of(SECRET)));
            assertTrue(e.getMessage().contains("does not speak the Panamax handshake"), e::getMessage);
            served.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aSilentStrangerIsDroppedAfterTheHandshakeTimeoutWithoutBlockingTheRanks() throws Exception {
        Recorder log = new Recorder();
        try (StoreServer server = server(log, 4000);
             Socket stranger = new Socket("127.0.0.1", server.port())) {
            stranger.setSoTimeout(10_000);
            // While the stranger sits there saying nothing, the ranks connect and work.
            long start = System.nanoTime();
            try (StoreClient a = StoreClient.connect("127.0.0.1", server.port(), TIMEOUT, 0, MutualAuth.of(SECRET));
                 StoreClient b = StoreClient.connect("127.0.0.1", server.port(), TIMEOUT, 1, MutualAuth.of(SECRET))) {
                a.set("x", "1");
                assertEquals("1", b.get("x"));
                b.barrier("b", 2 - 1);
            }
            assertTrue((System.nanoTime() - start) / 1e9 < 3.5, "the ranks waited for the stranger");
            // The stranger got the challenge, then the server hung up on it.
            InputStream in = stranger.getInputStream();
            assertEquals(4 + MutualAuth.NONCE_BYTES, in.readNBytes(4 + MutualAuth.NONCE_BYTES).length);
            assertEquals(-1, in.read());
            String where = "/127.0.0.1:" + stranger.getLocalPort();
            assertTrue(log.waitFor(where, 5000), log.lines::toString);
            assertTrue(log.lines.stream().anyMatch(l -> l.startsWith("WARNING") && l.contains(where)
                    && l.contains("no handshake within the time limit")), log.lines::toString);
        }
    }

    @Test
    void aStrangerSendingGarbageIsRejectedAndLogged() throws Exception {
        Recorder log = new Recorder();
        try (StoreServer server = server(log, 5000);
             Socket stranger = new Socket("127.0.0.1", server.port())) {
            stranger.setSoTimeout(10_000);
            byte[] garbage = new byte[200];
            new Random(42).nextBytes(garbage);
            stranger.getOutputStream().write(garbage);
            InputStream in = stranger.getInputStream();
            in.readNBytes(4 + MutualAuth.NONCE_BYTES);
            assertEquals(1, in.read(), "the server says rejected");
            assertEquals(-1, readOrEof(in), "then hangs up");
            String where = "/127.0.0.1:" + stranger.getLocalPort();
            assertTrue(log.waitFor(where, 5000), log.lines::toString);
            assertTrue(log.lines.stream().anyMatch(l -> l.startsWith("WARNING") && l.contains(where)
                    && l.contains("wrong proof")),
                    log.lines::toString);
            // and a garbage store request without a handshake never reaches the data
            try (StoreClient ok = StoreClient.connect("127.0.0.1", server.port(), TIMEOUT, 0, MutualAuth.of(SECRET))) {
                ok.set("still", "here");
                assertEquals("here", ok.get("still"));
            }
        }
    }

    private static int readOrEof(InputStream in) {
        try {
            return in.read();
        } catch (IOException e) {
            return -1; // reset: also a hang-up
        }
    }

    @Test
    void theServerListensOnTheConfiguredAddressOnly() throws Exception {
        try (StoreServer server = server(new Recorder(), 2000)) {
            assertEquals(InetAddress.getByName("127.0.0.1"), server.address());
            assertFalse(server.address().isAnyLocalAddress());
            assumeTrue(canBind("127.0.0.2"), "127.0.0.2 is not a local address here");
            // Another local address does not reach it (a wildcard bind would accept this).
            try (Socket s = new Socket()) {
                assertThrows(ConnectException.class, () ->
                        s.connect(new InetSocketAddress("127.0.0.2", server.port()), 2000));
            }
        }
        assumeTrue(canBind("127.0.0.2"));
        try (StoreServer server = new StoreServer("127.0.0.2", 0, MutualAuth.of(SECRET), 2000, new Recorder())) {
            assertEquals(InetAddress.getByName("127.0.0.2"), server.address());
            try (Socket s = new Socket()) {
                assertThrows(ConnectException.class, () ->
                        s.connect(new InetSocketAddress("127.0.0.1", server.port()), 2000));
            }
            try (StoreClient c = StoreClient.connect("127.0.0.2", server.port(), TIMEOUT, 0, MutualAuth.of(SECRET))) {
                c.set("a", "1");
            }
        }
    }

    private static boolean canBind(String address) {
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new InetSocketAddress(address, 0));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** On its own thread (the common pool may have a single thread on small machines). */
    private static CompletableFuture<Void> async(Runnable body) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> {
            try {
                body.run();
                f.complete(null);
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        return f;
    }

    private static CompletableFuture<Communicator> rank(int r, int n, int port, Supplier<String> secret) {
        return rank(r, n, port, secret, Duration.ofSeconds(20));
    }

    private static CompletableFuture<Communicator> rank(int r, int n, int port, Supplier<String> secret,
            Duration timeout) {
        CompletableFuture<Communicator> f = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> {
            try {
                f.complete(Panamax.builder().config(new LaunchConfig(r, n, r, "127.0.0.1", port))
                        .transport(TransportKind.TCP)
                        .timeout(timeout).secret(secret.get()).connect());
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        return f;
    }

    @Test
    void ranksWithTheSecretConnectOverTcp() throws Exception {
        int port = freePort();
        List<CompletableFuture<Communicator>> ranks =
                List.of(rank(0, 3, port, () -> SECRET), rank(1, 3, port, () -> SECRET),
                rank(2, 3, port, () -> SECRET));
        for (CompletableFuture<Communicator> f : ranks) {
            f.get(60, TimeUnit.SECONDS);
        }
        List<CompletableFuture<Void>> barriers = ranks.stream().map(f -> async(() -> f.join().barrier())).toList();
        for (CompletableFuture<Void> b : barriers) {
            b.get(30, TimeUnit.SECONDS);
        }
        ranks.forEach(f -> f.join().close());
    }

    @Test
    void aRankWithTheWrongSecretGetsTheClearMessage() throws Exception {
        int port = freePort();
        CompletableFuture<Communicator> zero = rank(0, 2, port, () -> SECRET, Duration.ofSeconds(3));
        CompletableFuture<Communicator> one = rank(1, 2, port, () -> "not the job's secret at all");
        Throwable e = assertThrows(Exception.class, () -> one.get(30, TimeUnit.SECONDS)).getCause();
        assertTrue(e instanceof CollectiveException, () -> "got " + e);
        assertTrue(e.getMessage().contains("rank 1: the store at 127.0.0.1:" + port
                + " rejected this rank: wrong PANAMAX_SECRET?"),
                e::getMessage);
        // rank 0 never sees rank 1 and gives up at its timeout
        assertThrows(Exception.class, () -> zero.get(30, TimeUnit.SECONDS));
    }

    @Test
    void aStrangerPosingAsAPeerOnItsTcpPortIsRejectedAndTheRealPeerStillConnects() throws Exception {
        int port = freePort();
        CompletableFuture<Communicator> zero = rank(0, 2, port, () -> SECRET);
        String endpoint;
        // Find rank 0's data endpoint, as a port scan would (as rank 0: rank 1 leaving the store would count as
        // its failure).
        try (StoreClient peek = StoreClient.connect("127.0.0.1", port, TIMEOUT, 0, MutualAuth.of(SECRET))) {
            endpoint = peek.get("job/tcp/0");
        }
        String[] hp = endpoint.substring(0, endpoint.lastIndexOf('/')).split(":"); // host:port/connections
        try (Socket silent = new Socket(hp[0], Integer.parseInt(hp[1]));
             Socket stranger = new Socket(hp[0], Integer.parseInt(hp[1]))) {
            stranger.setSoTimeout(30_000);
            // Both wait in rank 0's accept queue ahead of the real rank 1, which rank 0 accepts only after the
            // rendezvous.
            CompletableFuture<Communicator> realOne = rank(1, 2, port, () -> SECRET);
            DataOutputStream out = new DataOutputStream(stranger.getOutputStream());
            DataInputStream in = new DataInputStream(stranger.getInputStream());
            in.readFully(new byte[4 + MutualAuth.NONCE_BYTES]);
            out.writeInt(1); // claims to be rank 1
            out.write(new byte[MutualAuth.NONCE_BYTES + MutualAuth.MAC_BYTES]);
            out.flush();
            assertEquals(1, in.read(), "rank 0 says rejected");
            assertEquals(-1, readOrEof(in));
            // The silent one is still connected; the real rank 1 joins regardless.
            Communicator one = realOne.get(60, TimeUnit.SECONDS);
            Communicator z = zero.get(60, TimeUnit.SECONDS);
            CompletableFuture<Void> b0 = async(z::barrier);
            one.barrier();
            b0.get(30, TimeUnit.SECONDS);
            one.close();
            z.close();
        }
    }
}
