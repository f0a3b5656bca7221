package dev.panamax.collectives;

import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Test helpers: groups of ranks as threads over each transport, and running a body on every rank. */
final class Ranks {
    /** Collective timeout used by tests: short, so that a bug fails fast instead of hanging. */
    static final Duration TIMEOUT = Duration.ofSeconds(20);
    /** How long a whole test body may run on one rank (a grid of hundreds of collectives on a loaded machine). */
    static final Duration WALL_LIMIT = Duration.ofMinutes(5);

    /** The transports of the contract suite (VERBS needs an RDMA device and runs only where asked for, see {@link #selected}). */
    enum Transport {
        LOCAL, SHM, TCP, VERBS;

        List<Communicator> open(int n) {
            return open(n, TIMEOUT);
        }

        List<Communicator> open(int n, Duration timeout) {
            if (this == LOCAL) {
                return Panamax.local(n, timeout.toNanos());
            }
            int port = freePort();
            TransportKind kind = switch (this) {
                case SHM -> TransportKind.SHM;
                case VERBS -> TransportKind.VERBS;
                default -> TransportKind.TCP;
            };
            List<Communicator> out = onEachRank(n, r -> Panamax.builder()
                    .config(new LaunchConfig(r, n, r, "127.0.0.1", port))
                    .transport(kind)
                    .timeout(timeout)
                    .connect());
            return out;
        }
    }

    /**
     * {@code -Dpanamax.test.transports=LOCAL,SHM} narrows the suites to some transports (by default
     * all but VERBS, whose suite is {@code VerbsTransportTest}, tagged {@code rdma}).
     */
    static boolean selected(Transport t) {
        String only = System.getProperty("panamax.test.transports", "");
        if (only.isBlank()) {
            return t != Transport.VERBS;
        }
        return java.util.Arrays.asList(only.toUpperCase(java.util.Locale.ROOT).split(",")).contains(t.name());
    }

    interface RankBody<T> {
        T run(int rank) throws Exception;
    }

    interface CommBody {
        void run(Communicator c) throws Exception;
    }

    /** Runs {@code body} on every communicator, each in its own thread; rethrows the first failure. */
    static void run(List<Communicator> comms, CommBody body) {
        onEachRank(comms.size(), r -> {
            body.run(comms.get(r));
            return null;
        });
    }

    static <T> List<T> onEachRank(int n, RankBody<T> body) {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<T>> fs = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                int rank = r;
                fs.add(pool.submit(() -> body.run(rank)));
            }
            List<T> out = new ArrayList<>();
            Throwable first = null;
            for (Future<T> f : fs) {
                try {
                    out.add(f.get(WALL_LIMIT.toSeconds(), TimeUnit.SECONDS));
                } catch (ExecutionException e) {
                    // A timeout on one rank is usually the echo of a real failure on another: prefer the latter.
                    if (first == null || first instanceof CollectiveTimeoutException) {
                        first = e.getCause();
                    }
                    out.add(null);
                } catch (TimeoutException | InterruptedException e) {
                    if (first == null) {
                        first = new AssertionError("a rank did not finish in time", e);
                    }
                    out.add(null);
                }
            }
            if (first != null) {
                if (first instanceof RuntimeException re) {
                    throw re;
                }
                if (first instanceof Error er) {
                    throw er;
                }
                throw new RuntimeException(first);
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }

    static void closeAll(List<Communicator> comms) {
        for (Communicator c : comms) {
            if (c != null) {
                c.close();
            }
        }
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    private Ranks() {
    }
}
