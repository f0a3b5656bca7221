package dev.panamax.collectives.internal;

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
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The rendezvous store: a small key-value server run by rank 0, and its client. Ranks publish
 * their endpoints with {@code set} and read the others' with {@code get}, which waits until the key
 * exists. Values are strings; the protocol is length-prefixed frames over one TCP connection per
 * rank. Only used while connecting, so it favours simplicity over speed.
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
        private final Map<String, String> data = new HashMap<>();
        private final Map<Socket, Boolean> clients = new ConcurrentHashMap<>();
        private final Thread acceptor;
        private volatile boolean closed;

        Server(String address, int port) {
            try {
                socket = new ServerSocket();
                socket.setReuseAddress(true);
                socket.bind(new InetSocketAddress(address, port), 128);
            } catch (IOException e) {
                throw new CollectiveException("rank 0 cannot listen on " + address + ":" + port + " for the rendezvous store: " + e.getMessage(), e);
            }
            acceptor = Thread.ofPlatform().daemon().name("panamax-store").start(this::acceptLoop);
        }

        int port() {
            return socket.getLocalPort();
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
            try (s; DataInputStream in = new DataInputStream(s.getInputStream());
                 DataOutputStream out = new DataOutputStream(s.getOutputStream())) {
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

        /** Connects, retrying until the server is up or {@code timeoutNanos} has passed. */
        static Client connect(String address, int port, long timeoutNanos, int rank) {
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
                    s.setSoTimeout((int) Math.max(1, Math.min(Integer.MAX_VALUE, timeoutNanos / 1_000_000)));
                    return new Client(s, where);
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
