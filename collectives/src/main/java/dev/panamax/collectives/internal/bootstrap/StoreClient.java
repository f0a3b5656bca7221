package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.internal.auth.MutualAuth;
import dev.panamax.collectives.internal.elastic.AgreementState;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.Arrays;

import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_ADD;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_AGREE;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_FAILED;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_GET_FROM;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_GET;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_SET;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.readString;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.writeString;

/**
 * A rank's connection to the rendezvous store ({@link StoreServer}). One request at a time: the
 * communicators of one process that share it (a communicator and those shrunk from it) take turns.
 */
public final class StoreClient implements AutoCloseable {
    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    private final String where;

    private StoreClient(Socket socket, String where) throws IOException {
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
    public static StoreClient connect(String address, int port, long timeoutNanos, int rank, MutualAuth auth) {
        long deadline = System.nanoTime() + timeoutNanos;
        String where = address + ":" + port;
        IOException last = null;
        long sleepMillis = 5;
        while (System.nanoTime() - deadline < 0) {
            Socket s = new Socket();
            try {
                int remaining = (int) Math.max(1, Math.min(Integer.MAX_VALUE, (deadline - System.nanoTime())
                        / 1_000_000));
                s.connect(new InetSocketAddress(address, port), Math.min(remaining, 5000));
                s.setTcpNoDelay(true);
                remaining = (int) Math.max(1, Math.min(Integer.MAX_VALUE, (deadline - System.nanoTime()) / 1_000_000));
                s.setSoTimeout(Math.min(remaining, MutualAuth.HANDSHAKE_TIMEOUT_MILLIS));
                StoreClient c = new StoreClient(s, where);
                auth.connect(c.in, c.out, MutualAuth.STORE_CONTEXT, rank);
                s.setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, timeoutNanos / 1_000_000)));
                return c;
            } catch (MutualAuth.Rejected e) {
                closeQuietly(s);
                throw new CollectiveException("rank " + rank + ": the store at " + where
                        + " rejected this rank: wrong PANAMAX_SECRET?", e);
            } catch (MutualAuth.Unproven e) {
                closeQuietly(s);
                throw new CollectiveException("rank " + rank + ": the store at " + where
                        + " could not prove it holds the job's secret "
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
        throw new CollectiveTimeoutException("rank " + rank + " could not reach the rendezvous store at " + where
                + " within "
                + timeoutNanos / 1_000_000_000.0 + " s (is rank 0 running, PANAMAX_MASTER_ADDR/PORT right?): "
                + (last == null ? "timed out" : last.getMessage()));
    }

    /** The local address of the connection to the server: the address this process uses to reach the master. */
    public InetAddress localAddress() {
        return socket.getLocalAddress();
    }

    public synchronized void set(String key, String value) {
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
    public synchronized String get(String key) {
        return call(() -> {
            out.writeInt(OP_GET);
            writeString(out, key);
            out.flush();
            return readString(in);
        }, "get " + key);
    }

    public synchronized long add(String key, long delta) {
        return Long.parseLong(call(() -> {
            out.writeInt(OP_ADD);
            writeString(out, key);
            writeString(out, Long.toString(delta));
            out.flush();
            return readString(in);
        }, "add " + key));
    }

    /**
     * Waits until {@code key} exists and returns its value, or returns null once member
     * {@code from} (who is to publish it) has failed.
     */
    public synchronized String getFrom(String key, int from) {
        String v = call(() -> {
            out.writeInt(OP_GET_FROM);
            writeString(out, key);
            writeString(out, Integer.toString(from));
            out.flush();
            return readString(in);
        }, "get " + key);
        return v.startsWith("1") ? v.substring(1) : null;
    }

    /**
     * Contributes {@code flags} for member {@code self} to agreement {@code instance} among
     * {@code members} and waits for the decision: at most {@code timeoutNanos} after the first
     * member contributed (the store then counts the others as failed), plus a margin.
     */
    public synchronized AgreementState.Decision agree(String instance, int[] members, int self, long flags,
            long timeoutNanos) {
        String request = agreeRequest(members, self, flags, timeoutNanos);
        String answer = call(() -> {
            int before = socket.getSoTimeout();
            // The store answers by the deadline it set; the margin covers the first contributor's lead.
            socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, 2 * timeoutNanos / 1_000_000 + 5_000));
            try {
                out.writeInt(OP_AGREE);
                writeString(out, instance);
                writeString(out, request);
                out.flush();
                return readString(in);
            } finally {
                socket.setSoTimeout(before);
            }
        }, "agree " + instance);
        if (answer.startsWith("error ")) {
            throw new CollectiveException("rendezvous store at " + where + ": " + answer.substring(6));
        }
        String[] f = answer.split(" ", -1);
        int[] failed = f[1].isEmpty() ? new int[0] : Arrays.stream(f[1].split(",")).mapToInt(Integer::parseInt)
                .toArray();
        return new AgreementState.Decision(Long.parseUnsignedLong(f[0], 16), failed);
    }

    /** Whether the store counts {@code member} as failed now (its last connection ended); does not wait. */
    public synchronized boolean failed(int member) {
        return call(() -> {
            out.writeInt(OP_FAILED);
            writeString(out, "failed");
            writeString(out, Integer.toString(member));
            out.flush();
            return readString(in);
        }, "failed " + member).equals("1");
    }

    /** Contributes like {@link #agree} but does not wait for the decision (this member is leaving). */
    public synchronized void contribute(String instance, int[] members, int self, long flags, long timeoutNanos) {
        String request = agreeRequest(members, self, flags, timeoutNanos) + " nowait";
        call(() -> {
            out.writeInt(OP_AGREE);
            writeString(out, instance);
            writeString(out, request);
            out.flush();
            return readString(in);
        }, "agree " + instance);
    }

    private static String agreeRequest(int[] members, int self, long flags, long timeoutNanos) {
        StringBuilder request = new StringBuilder().append(self).append(' ').append(Long.toHexString(flags))
                .append(' ').append(Math.max(1, timeoutNanos / 1_000_000)).append(' ');
        for (int i = 0; i < members.length; i++) {
            request.append(i == 0 ? "" : ",").append(members[i]);
        }
        return request.toString();
    }

    /** Waits until all {@code size} ranks have called it with the same {@code name}. */
    public void barrier(String name, int size) {
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
            throw new CollectiveTimeoutException("rendezvous store at " + where + ": '" + what
                    + "' timed out (a rank did not join?)");
        } catch (EOFException e) {
            throw new CollectiveException("rendezvous store at " + where + " closed the connection during '" + what
                    + "' (rank 0 gone?)", e);
        } catch (IOException e) {
            throw new CollectiveException("rendezvous store at " + where + ": '" + what + "' failed: " + e.getMessage(),
                    e);
        }
    }

    /**
     * Closes the connection (the store sees this member leave); any thread, also while another is
     * waiting on the store, whose wait then fails. A request in progress keeps the lock, so no
     * goodbye is sent: the store treats the end of the stream alike.
     */
    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // failing anyway
        }
    }
}
