package dev.panamax.lightgbm;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;

import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.IntSupplier;

/**
 * LightGBM's own TCP network ({@code LGBM_NetworkInit}) for the ranks of a communicator, all on this host: the
 * communicator agrees on the ports, and the network starts on every rank or the start fails on every rank.
 *
 * <p>LightGBM binds each rank's port itself, a while after the port was chosen. A bind that fails there is worse
 * than an error on one rank: the higher ranks' {@code LGBM_NetworkInit} waits for that rank's connection for ever,
 * the lower ranks' retries its connection for minutes and then returns as if it had been made, and a rank that
 * trains against the missing peer fails, hangs, or ends the whole process inside LightGBM (each has been seen).
 * So the ports come from below the operating system's range for ephemeral ports (no outgoing connection or
 * port-0 bind, LightGBM's own included, can take one meanwhile), each checked bindable as LightGBM binds it
 * (without address reuse), the ranks' ports must all differ, and after {@code LGBM_NetworkInit} the ranks confirm
 * through the communicator. A rank whose start failed makes the connections the higher ranks wait for (so that
 * their start returns), abandons the communicator and throws; the others leave LightGBM's network and throw the
 * communicator's error, which names it.
 */
final class LocalSocketNetwork {
    /** The address of every rank in LightGBM's machine list. */
    static final String HOST = "127.0.0.1";
    /** Rounds of choosing before two ranks' equal ports are an error. */
    private static final int PORT_ROUNDS = 16;
    /** Random ports tried below the ephemeral range before falling back to the system's choice. */
    private static final int CANDIDATES = 64;
    /** The lowest port tried: the ports below need privileges. */
    private static final int LOWEST_PORT = 1024;
    /** Linux's range of ephemeral ports: the lowest and highest, separated by white space. */
    static final Path EPHEMERAL_RANGE = Path.of("/proc/sys/net/ipv4/ip_local_port_range");
    /** How long a failed rank keeps trying to reach a higher rank that has not listened yet. */
    private static final long RELEASE_NANOS = 5_000_000_000L;
    private static final int CONNECT_TIMEOUT_MILLIS = 1_000;

    private LocalSocketNetwork() {
    }

    /**
     * Joins this thread, as {@code comm}'s rank, to LightGBM's socket network of all of {@code comm}'s ranks; a
     * collective call. On failure {@code panamax} is abandoned (see {@link CommunicatorNetwork#abandon}).
     */
    static NetworkSession start(Communicator comm, CommunicatorNetwork panamax) {
        return start(comm, panamax, agreePorts(comm, LocalSocketNetwork::candidatePort));
    }

    /** As {@link #start(Communicator, CommunicatorNetwork)}, on the agreed {@code ports} (one a rank). */
    static NetworkSession start(Communicator comm, CommunicatorNetwork panamax, int[] ports) {
        int rank = comm.rank();
        NetworkSession session;
        try {
            session = NetworkSession.sockets(machineList(ports), ports[rank], 1, ports.length);
        } catch (RuntimeException | Error e) {
            releaseHigherRanks(rank, ports);
            panamax.abandon(e);
            throw e;
        }
        try {
            // Fails at once when a rank's start failed: that rank has abandoned the communicator.
            comm.barrier();
            return session;
        } catch (RuntimeException | Error e) {
            try {
                session.close();
            } catch (RuntimeException | Error closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
    }

    /**
     * Every rank's port, a different one for each: each rank offers one from {@code candidates}, and all choose
     * again (the same decision on every rank, as all see the same ports) until no two are equal.
     */
    static int[] agreePorts(Communicator comm, IntSupplier candidates) {
        int n = comm.size();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mine = arena.allocate(JAVA_INT);
            MemorySegment every = arena.allocate(JAVA_INT, n);
            for (int round = 1; ; round++) {
                mine.set(JAVA_INT, 0, candidates.getAsInt());
                comm.allGather(mine, every, 1, DataType.INT32);
                int[] ports = every.toArray(JAVA_INT);
                if (Arrays.stream(ports).distinct().count() == n) {
                    return ports;
                }
                if (round == PORT_ROUNDS) {
                    throw new IllegalStateException("LightGBM's socket network: after " + PORT_ROUNDS
                            + " rounds the ranks still chose equal ports: " + Arrays.toString(ports));
                }
            }
        }
    }

    /**
     * A port that LightGBM can bind now and that no ephemeral allocation can take until it does: a random free one
     * below the system's ephemeral range, or, where that range is unknown or leaves no room, the system's choice.
     */
    static int candidatePort() {
        int ephemeralLow = ephemeralLow();
        if (ephemeralLow > LOWEST_PORT + CANDIDATES) {
            for (int i = 0; i < CANDIDATES; i++) {
                int port = ThreadLocalRandom.current().nextInt(LOWEST_PORT, ephemeralLow);
                if (bindable(port)) {
                    return port;
                }
            }
        }
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException("LightGBM's socket network: no free TCP port: " + e.getMessage(), e);
        }
    }

    /** The lowest ephemeral port (Linux's {@code ip_local_port_range}), or -1 where unknown. */
    static int ephemeralLow() {
        try {
            // Files.readString returned this procfs file cut short (JDK 25); readAllLines reads it whole.
            String[] range = Files.readAllLines(EPHEMERAL_RANGE).getFirst().trim().split("\\s+");
            return Integer.parseInt(range[0]);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** Whether {@code port} can be bound on every address without address reuse, as LightGBM binds it. */
    static boolean bindable(int port) {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(false);
            s.bind(new InetSocketAddress(port));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** LightGBM's machine list: {@code 127.0.0.1:port} for each rank, comma separated. */
    static String machineList(int[] ports) {
        StringBuilder machines = new StringBuilder();
        for (int r = 0; r < ports.length; r++) {
            machines.append(r == 0 ? "" : ",").append(HOST).append(':').append(ports[r]);
        }
        return machines.toString();
    }

    /**
     * Makes, for this failed rank, the connection each higher rank's LightGBM waits for (a connection that sends
     * the connecting rank, as LightGBM's does) and closes it, so that their {@code LGBM_NetworkInit} returns and
     * they learn of the failure from the communicator. Best effort: a rank not listening within a few seconds is
     * left to its own failure.
     */
    private static void releaseHigherRanks(int rank, int[] ports) {
        byte[] hello = ByteBuffer.allocate(Integer.BYTES).order(ByteOrder.nativeOrder()).putInt(rank).array();
        long deadline = System.nanoTime() + RELEASE_NANOS;
        for (int peer = rank + 1; peer < ports.length; peer++) {
            while (!sent(hello, ports[peer]) && System.nanoTime() - deadline < 0) {
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    private static boolean sent(byte[] hello, int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(HOST, port), CONNECT_TIMEOUT_MILLIS);
            OutputStream out = socket.getOutputStream();
            out.write(hello);
            out.flush();
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
