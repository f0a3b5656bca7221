package dev.panamax.collectives.internal.auth;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntPredicate;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

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
public final class MutualAuth {
    /** Secrets shorter than this are accepted with a warning. */
    public static final int MIN_SECRET_CHARS = 16;
    public static final int MAGIC = 0x504D5841; // "PMXA"
    public static final int NONCE_BYTES = 32;
    public static final int MAC_BYTES = 32;
    /** How long a connection may take to prove itself to the side that accepted it. */
    public static final int HANDSHAKE_TIMEOUT_MILLIS = 10_000;
    public static final String STORE_CONTEXT = "panamax-store-v1";
    public static final System.Logger LOG = System.getLogger("dev.panamax.collectives.auth");

    private static final byte[] NO_SECRET_KEY = "panamax: no PANAMAX_SECRET set".getBytes(StandardCharsets.UTF_8);
    private static final AtomicBoolean WARNED_UNSET = new AtomicBoolean();
    private static final AtomicBoolean WARNED_SHORT = new AtomicBoolean();
    private static final SecureRandom RANDOM = new SecureRandom();

    private final SecretKeySpec key;

    private MutualAuth(byte[] key) {
        this.key = new SecretKeySpec(key, "HmacSHA256");
    }

    /** The key for {@code secret}; null or empty means none (logged once as a WARNING). */
    public static MutualAuth of(String secret) {
        if (secret == null || secret.isEmpty()) {
            if (WARNED_UNSET.compareAndSet(false, true)) {
                LOG.log(System.Logger.Level.WARNING,
                        "PANAMAX_SECRET is not set: this job is unauthenticated, anyone who can reach "
                        + "the rendezvous store or a rank's TCP port can join it (scripts/panamax-run and "
                        + "panamax-perf set one)");
            }
            return new MutualAuth(NO_SECRET_KEY);
        }
        if (secret.length() < MIN_SECRET_CHARS && WARNED_SHORT.compareAndSet(false, true)) {
            LOG.log(System.Logger.Level.WARNING, "PANAMAX_SECRET has " + secret.length() + " characters; use at least "
                    + MIN_SECRET_CHARS + " (for example 32 hex digits from /dev/urandom)");
        }
        return new MutualAuth(secret.getBytes(StandardCharsets.UTF_8));
    }

    /** The other side told us our proof was wrong. */
    public static final class Rejected extends IOException {
        Rejected(String message) {
            super(message);
        }
    }

    /** The other side did not prove it holds the secret, or does not speak this protocol. */
    public static final class Unproven extends IOException {
        Unproven(String message) {
            super(message);
        }
    }

    /** Why a handshake failed, for the log. */
    public static String reason(IOException e) {
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
    public int accept(DataInputStream in, DataOutputStream out, String context,
            IntPredicate claimOk) throws IOException {
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
    public void connect(DataInputStream in, DataOutputStream out, String context, int claim) throws IOException {
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
