package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.internal.auth.MutualAuth;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;

import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_ADD;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_BYE;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_GET;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.OP_SET;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.readString;
import static dev.panamax.collectives.internal.bootstrap.StoreProtocol.writeString;

/** A rank's connection to the rendezvous store ({@link StoreServer}). Not thread-safe. */
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

    public void set(String key, String value) {
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
    public String get(String key) {
        return call(() -> {
            out.writeInt(OP_GET);
            writeString(out, key);
            out.flush();
            return readString(in);
        }, "get " + key);
    }

    public long add(String key, long delta) {
        return Long.parseLong(call(() -> {
            out.writeInt(OP_ADD);
            writeString(out, key);
            writeString(out, Long.toString(delta));
            out.flush();
            return readString(in);
        }, "add " + key));
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

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // failing anyway
        }
    }
}
