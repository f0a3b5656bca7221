package dev.panamax.collectives.internal.bootstrap;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The rendezvous store's wire format, shared by {@link StoreServer} and {@link StoreClient}: after
 * the handshake, each request is an operation code (int) and a key, then the operation's value;
 * strings are length-prefixed UTF-8 frames.
 */
final class StoreProtocol {
    static final int OP_SET = 1;
    static final int OP_GET = 2;
    static final int OP_ADD = 3;
    // 4 was a goodbye; a client now just closes its connection, which the store treats alike.
    /** Agreement: key the instance, value "self flags timeoutMillis member,member,..."; answers the decision. */
    static final int OP_AGREE = 5;
    /** Get that gives up when a member dies: value the member id; answers "1" + value, or "0" if it died. */
    static final int OP_GET_FROM = 6;
    /** Whether a member has failed, at once: value the member id; answers "1" or "0". */
    static final int OP_FAILED = 7;

    private StoreProtocol() {
    }

    private static final int MAX_STRING = 1 << 20;

    static String readString(DataInputStream in) throws IOException {
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

    static void writeString(DataOutputStream out, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length);
        out.write(b);
    }
}
