package dev.panamax.ml;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** Test helper: in-JVM ranks (threads) running a body each; rethrows the first failure. */
public final class LocalRanks {
    /** Collective timeout in tests: short, so that a bug fails fast. */
    public static final Duration TIMEOUT = Duration.ofSeconds(20);

    public interface Body<T> {
        T run(Communicator comm) throws Exception;
    }

    private LocalRanks() {
    }

    public static <T> List<T> run(int n, Body<T> body) {
        return run(n, TIMEOUT, body);
    }

    public static <T> List<T> run(int n, Duration timeout, Body<T> body) {
        List<Communicator> comms = Panamax.local(n, timeout.toNanos());
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<T>> fs = new ArrayList<>();
            for (Communicator c : comms) {
                fs.add(pool.submit(() -> body.run(c)));
            }
            List<T> out = new ArrayList<>();
            Throwable first = null;
            for (Future<T> f : fs) {
                try {
                    out.add(f.get(5, TimeUnit.MINUTES));
                } catch (ExecutionException e) {
                    first = first == null ? e.getCause() : first;
                    out.add(null);
                } catch (Exception e) {
                    first = first == null ? e : first;
                    out.add(null);
                }
            }
            if (first instanceof RuntimeException re) {
                throw re;
            }
            if (first instanceof Error er) {
                throw er;
            }
            if (first != null) {
                throw new RuntimeException(first);
            }
            return out;
        } finally {
            pool.shutdownNow();
            comms.forEach(Communicator::close);
        }
    }
}
