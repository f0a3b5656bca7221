package dev.panamax.collectives;

import dev.panamax.testing.Ports;
import dev.panamax.testing.RankThreads;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The transports of the contract suites: a group of communicators, one per rank, over each of them
 * (ranks as threads; the runner and the other helpers are test-support's RankThreads and Ports).
 */
final class Ranks {
    /** Collective timeout used by tests: short, so that a bug fails fast instead of hanging. */
    static final Duration TIMEOUT = Duration.ofSeconds(20);

    /** The transports of the contract suite (VERBS needs an RDMA device and runs only where asked for, see {@link
     * #selected}). */
    enum Transport {
        LOCAL, SHM, TCP, VERBS;

        List<Communicator> open(int n) {
            return open(n, TIMEOUT);
        }

        List<Communicator> open(int n, Duration timeout) {
            if (this == LOCAL) {
                return Panamax.local(n, timeout.toNanos());
            }
            int port = Ports.freePort();
            TransportKind kind = switch (this) {
                case SHM -> TransportKind.SHM;
                case VERBS -> TransportKind.VERBS;
                default -> TransportKind.TCP;
            };
            List<Communicator> out = RankThreads.onEachRank(n, r -> Panamax.builder()
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
        return Arrays.asList(only.toUpperCase(Locale.ROOT).split(",")).contains(t.name());
    }

    private Ranks() {
    }
}
