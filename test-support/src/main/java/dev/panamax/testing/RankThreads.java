package dev.panamax.testing;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs a body on every rank of a group whose ranks are threads of this JVM: one thread per rank, a wall-clock
 * limit on the whole run, the results in rank order, and the first failure rethrown.
 *
 * <p>The ranks are numbered {@code 0..n-1} ({@link #onEachRank}), or are the elements of a list of resources,
 * for example communicators, the rank being the index ({@link #onEach}, {@link #run}); {@link #closeAll}
 * closes such a list.
 *
 * <p>Failures: the first failure in rank order is rethrown, except that a timeout (an exception whose class
 * name ends in {@code TimeoutException}) gives way to a later rank's other failure: a timeout on one rank is
 * usually the echo of a real failure on another. Unchecked exceptions are rethrown as they are, so that tests
 * can assert their type, with a suppressed {@link ThrownOnRank} naming the rank; checked ones are wrapped in a
 * {@link RuntimeException} that names it. A rank still running at the wall-clock limit fails the run with an
 * {@link AssertionError} naming it, unless another rank failed (which it was probably waiting for). The
 * threads still running are interrupted before the failure is thrown.
 */
public final class RankThreads {
    /** How long a whole test body may run on one rank (a grid of hundreds of collectives on a loaded machine). */
    public static final Duration WALL_LIMIT = Duration.ofMinutes(5);

    /** The body run on each rank of {@code 0..n-1}. */
    @FunctionalInterface
    public interface RankBody<T> {
        T run(int rank) throws Exception;
    }

    /** The body run on each resource of a list, with a result. */
    @FunctionalInterface
    public interface ResourceFunction<R, T> {
        T apply(R resource) throws Exception;
    }

    /** The body run on each resource of a list, without a result. */
    @FunctionalInterface
    public interface ResourceBody<R> {
        void run(R resource) throws Exception;
    }

    /** Added, suppressed, to a rank's failure that is rethrown as it is: says which rank threw it. */
    public static final class ThrownOnRank extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final int rank;

        ThrownOnRank(int rank, int ranks) {
            super("thrown on rank " + rank + " of " + ranks, null, false, false);
            this.rank = rank;
        }

        /** The rank whose body threw. */
        public int rank() {
            return rank;
        }
    }

    private RankThreads() {
    }

    /** {@link #onEachRank(int, Duration, RankBody)} within {@link #WALL_LIMIT}. */
    public static <T> List<T> onEachRank(int n, RankBody<T> body) {
        return onEachRank(n, WALL_LIMIT, body);
    }

    /**
     * Runs {@code body} for each rank of {@code 0..n-1}, each in a thread of its own, and returns the results
     * in rank order.
     *
     * @param wallLimit how long the ranks may run, all together
     * @throws IllegalArgumentException when {@code n < 1}
     */
    public static <T> List<T> onEachRank(int n, Duration wallLimit, RankBody<T> body) {
        if (n < 1) {
            throw new IllegalArgumentException("need at least one rank: " + n);
        }
        List<FutureTask<T>> tasks = new ArrayList<>(n);
        List<Thread> threads = new ArrayList<>(n);
        for (int r = 0; r < n; r++) {
            int rank = r;
            FutureTask<T> task = new FutureTask<>(() -> body.run(rank));
            tasks.add(task);
            // Daemon threads: a rank that hangs past the limit cannot keep the test JVM alive.
            threads.add(Thread.ofPlatform().daemon().name("rank-" + r).start(task));
        }
        long deadline = System.nanoTime() + wallLimit.toNanos();
        List<T> results = new ArrayList<>(n);
        Throwable first = null;
        int firstRank = -1;
        int unfinishedRank = -1;
        Throwable[] failed = new Throwable[n];
        try {
            for (int r = 0; r < n; r++) {
                try {
                    long left = Math.max(0, deadline - System.nanoTime());
                    results.add(tasks.get(r).get(left, TimeUnit.NANOSECONDS));
                } catch (ExecutionException e) {
                    results.add(null);
                    Throwable cause = e.getCause();
                    failed[r] = cause;
                    if (first == null || (isTimeout(first) && !isTimeout(cause))) {
                        first = cause;
                        firstRank = r;
                    }
                } catch (TimeoutException e) {
                    results.add(null);
                    if (unfinishedRank < 0) {
                        unfinishedRank = r;
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new AssertionError("interrupted while waiting for rank " + r + " of " + n, e);
                }
            }
        } finally {
            for (Thread t : threads) {
                t.interrupt();
            }
        }
        if (first != null) {
            throw rethrown(first, firstRank, failed);
        }
        if (unfinishedRank >= 0) {
            throw new AssertionError("rank " + unfinishedRank + " of " + n + " did not finish within " + wallLimit);
        }
        return results;
    }

    /** {@link #onEach(List, Duration, ResourceFunction)} within {@link #WALL_LIMIT}. */
    public static <R, T> List<T> onEach(List<R> resources, ResourceFunction<R, T> body) {
        return onEach(resources, WALL_LIMIT, body);
    }

    /** Runs {@code body} on each of {@code resources} (rank {@code i} on element {@code i}); results in order. */
    public static <R, T> List<T> onEach(List<R> resources, Duration wallLimit, ResourceFunction<R, T> body) {
        return onEachRank(resources.size(), wallLimit, r -> body.apply(resources.get(r)));
    }

    /** {@link #run(List, Duration, ResourceBody)} within {@link #WALL_LIMIT}. */
    public static <R> void run(List<R> resources, ResourceBody<R> body) {
        run(resources, WALL_LIMIT, body);
    }

    /** Runs {@code body} on each of {@code resources}, each in a thread of its own. */
    public static <R> void run(List<R> resources, Duration wallLimit, ResourceBody<R> body) {
        onEachRank(resources.size(), wallLimit, r -> {
            body.run(resources.get(r));
            return null;
        });
    }

    /**
     * Closes every resource that is not null, every one even when some fail, and rethrows the first failure with
     * the others suppressed (a checked one wrapped in a {@link RuntimeException}).
     */
    public static void closeAll(Iterable<? extends AutoCloseable> resources) {
        Throwable first = null;
        for (AutoCloseable c : resources) {
            if (c == null) {
                continue;
            }
            try {
                c.close();
            } catch (Exception | Error e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first instanceof RuntimeException re) {
            throw re;
        }
        if (first instanceof Error er) {
            throw er;
        }
        if (first != null) {
            throw new RuntimeException("closing " + first.getMessage(), first);
        }
    }

    /** True for a failure that is likely the echo of another: a timeout, by the name of its class. */
    static boolean isTimeout(Throwable t) {
        return t.getClass().getSimpleName().endsWith("TimeoutException");
    }

    /**
     * The failure to throw, noting its rank, with the other ranks' failures suppressed in it (each noting its own):
     * the one chosen may be the echo of another rank's (a peer that closed its connection), whose own error would
     * otherwise be lost.
     */
    private static RuntimeException rethrown(Throwable failure, int rank, Throwable[] failed) {
        int ranks = failed.length;
        RuntimeException wrapped = null;
        Throwable carrier = failure;
        if (failure instanceof RuntimeException || failure instanceof Error) {
            failure.addSuppressed(new ThrownOnRank(rank, ranks));
        } else {
            wrapped = new RuntimeException("rank " + rank + " of " + ranks + " failed: " + failure, failure);
            carrier = wrapped;
        }
        for (int r = 0; r < ranks; r++) {
            Throwable other = failed[r];
            if (other != null && other != failure) {
                other.addSuppressed(new ThrownOnRank(r, ranks));
                carrier.addSuppressed(other);
            }
        }
        if (failure instanceof RuntimeException re) {
            return re;
        }
        if (failure instanceof Error er) {
            throw er;
        }
        return wrapped;
    }
}
