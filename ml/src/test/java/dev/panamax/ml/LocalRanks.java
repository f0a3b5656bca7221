package dev.panamax.ml;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.testing.RankThreads;

import java.time.Duration;
import java.util.List;

/**
 * In-JVM ranks for the tests of ml: a group of local communicators ({@link Panamax#local}), a body run on each
 * in a thread of its own ({@link RankThreads}, which rethrows the first failure), then the group closed.
 */
public final class LocalRanks {
    /** Collective timeout in tests: short, so that a bug fails fast. */
    public static final Duration TIMEOUT = Duration.ofSeconds(20);

    public interface Body<T> {
        T run(Communicator comm) throws Exception;
    }

    private LocalRanks() {
    }

    /** Runs {@code body} on each of {@code n} local ranks with the collective timeout {@link #TIMEOUT}. */
    public static <T> List<T> run(int n, Body<T> body) {
        return run(n, TIMEOUT, body);
    }

    /** Runs {@code body} on each of {@code n} local ranks; returns the results in rank order. */
    public static <T> List<T> run(int n, Duration timeout, Body<T> body) {
        List<Communicator> comms = Panamax.local(n, timeout.toNanos());
        try {
            return RankThreads.onEach(comms, body::run);
        } finally {
            RankThreads.closeAll(comms);
        }
    }
}
