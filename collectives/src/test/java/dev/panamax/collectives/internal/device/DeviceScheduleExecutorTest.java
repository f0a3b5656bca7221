package dev.panamax.collectives.internal.device;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.Reference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The device executor's protocol on host memory ({@link EmulatedDeviceOps}): ranks are threads that
 * share a control block and each other's segments, and run the ring and halving/doubling
 * schedules the host path runs, checked element by element against a reference.
 */
class DeviceScheduleExecutorTest {
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(20);
    private static final long[] COUNTS = {0, 1, 3, 7, 97, (1 << 16) + 7};
    private static final DataType[] TYPES = DataType.values();

    /** A group of in-JVM ranks with host "devices". */
    private static final class Group implements AutoCloseable {
        final int n;
        final Arena arena = Arena.ofShared();
        final MemorySegment block;
        final EmulatedDeviceOps.Fabric fabric = new EmulatedDeviceOps.Fabric();
        final List<DeviceSignals> controls = new ArrayList<>();
        final List<EmulatedDeviceOps> ops = new ArrayList<>();
        final List<DeviceScheduleExecutor<MemorySegment>> executors = new ArrayList<>();

        Group(int n, long timeoutNanos) {
            this.n = n;
            block = arena.allocate(DeviceSignals.byteSize(n), 64);
            for (int r = 0; r < n; r++) {
                controls.add(new DeviceSignals(block, null, r, n,
                        n > Runtime.getRuntime().availableProcessors()));
                ops.add(new EmulatedDeviceOps(fabric, r));
                executors.add(new DeviceScheduleExecutor<>(ops.get(r), controls.get(r), timeoutNanos));
            }
        }

        @Override
        public void close() {
            for (int r = 0; r < n; r++) {
                executors.get(r).close();
                ops.get(r).close();
                controls.get(r).close();
            }
            arena.close();
        }
    }

    /** Runs {@code body} on every rank in its own thread; rethrows the first failure (not a timeout echo). */
    static <T> List<T> onEachRank(int n, IntFunction<T> body) {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try {
            List<Future<T>> fs = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                int rank = r;
                fs.add(pool.submit(() -> body.apply(rank)));
            }
            List<T> out = new ArrayList<>();
            Throwable first = null;
            for (Future<T> f : fs) {
                try {
                    out.add(f.get(5, TimeUnit.MINUTES));
                } catch (ExecutionException e) {
                    if (first == null || first instanceof PeerFailedException) {
                        first = e.getCause();
                    }
                    out.add(null);
                } catch (Exception e) {
                    first = first == null ? new AssertionError("a rank did not finish", e) : first;
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
        }
    }

    private static Schedule schedule(String algorithm, int rank, int n, long count, DataType type) {
        return Algorithms.get(algorithm).build(new Problem(Collective.ALL_REDUCE, rank, n, count, type.byteSize(), 0,
                Topology.flat(n)));
    }

    /** One all-reduce on every rank of {@code g}; returns the first wrong element's description, or null. */
    private static String allReduce(Group g, int rank, String algorithm, long count, DataType type, ReduceOp op,
            boolean inPlace) {
        int e = type.byteSize();
        try (Arena a = Arena.ofShared()) {
            MemorySegment send = a.allocate(Math.max(1, count * e), 64);
            MemorySegment recv = inPlace ? send : a.allocate(Math.max(1, count * e), 64);
            for (long i = 0; i < count; i++) {
                type.setFromDouble(send, 0, i, Reference.input(rank, i, type, op));
            }
            if (!inPlace) {
                recv.fill((byte) 0x5a);
            }
            g.executors.get(rank).run(schedule(algorithm, rank, g.n, count, type), send, recv, type, op);
            for (long i = 0; i < count; i++) {
                double want = Reference.expected(i, g.n, type, op);
                double got = type.getAsDouble(recv, 0, i);
                boolean ok = type.isFloatingPoint() ? Math.abs(got - want) <= Reference.tolerance(type)
                        * Math.max(1, Math.abs(want)) : got == want;
                if (!ok) {
                    return algorithm + " n=" + g.n + " rank " + rank + " " + type + " " + op + " count " + count
                            + (inPlace ? " in place" : "") + ": element " + i + " is " + got + ", expected " + want;
                }
            }
            return null;
        }
    }

    @ParameterizedTest(name = "{0} on {1} ranks")
    @CsvSource({"ring,1", "ring,2", "ring,3", "ring,4", "ring,5", "ring,8", "rhd,1", "rhd,2", "rhd,3", "rhd,4", "rhd,5",
            "rhd,8"})
    void allReduceMatchesTheReference(String algorithm, int n) {
        try (Group g = new Group(n, TIMEOUT_NANOS)) {
            List<List<String>> wrong = onEachRank(n, rank -> {
                List<String> errors = new ArrayList<>();
                int call = 0;
                for (long count : COUNTS) {
                    for (DataType type : TYPES) {
                        for (ReduceOp op : ReduceOp.values()) {
                            // The largest count for a subset of the combinations: they cost the most.
                            if (count > 100 && (op.ordinal() + type.ordinal()) % 3 != 0) {
                                continue;
                            }
                            String err = allReduce(g, rank, algorithm, count, type, op, call++ % 2 == 1);
                            if (err != null) {
                                errors.add(err);
                            }
                        }
                    }
                }
                return errors;
            });
            for (List<String> w : wrong) {
                if (!w.isEmpty()) {
                    fail(w.size() + " wrong results, first: " + w.getFirst());
                }
            }
        }
    }

    @Test
    void aRankThatNeverComesTimesOutNamingIt() {
        assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
            try (Group g = new Group(2, TimeUnit.MILLISECONDS.toNanos(300))) {
                RuntimeException e = assertThrows(RuntimeException.class,
                        () -> allReduce(g, 0, "ring", 100, DataType.FLOAT32, ReduceOp.SUM, true));
                assertInstanceOf(CollectiveTimeoutException.class, e);
                assertTrue(e.getMessage().contains("rank 1 did not"), e.getMessage());
                // The failure leaves the executor unusable rather than out of step with its peers.
                assertThrows(IllegalStateException.class, () ->
                        allReduce(g, 0, "ring", 100, DataType.FLOAT32, ReduceOp.SUM, true));
            }
        });
    }

    @ParameterizedTest
    @CsvSource({"ring", "rhd"})
    void aClosedRankFailsItsPeersNamingIt(String algorithm) {
        assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
            try (Group g = new Group(3, TIMEOUT_NANOS)) {
                g.controls.get(2).close();
                List<Throwable> failures = onEachRank(2, rank -> {
                    try {
                        allReduce(g, rank, algorithm, 1000, DataType.FLOAT32, ReduceOp.SUM, false);
                        return null;
                    } catch (RuntimeException e) {
                        return e;
                    }
                });
                // Every rank that depends on rank 2 names it; a rank may instead name one that failed on account of
                // rank 2.
                PeerFailedException direct = null;
                for (Throwable t : failures) {
                    assertInstanceOf(PeerFailedException.class, t);
                    if (((PeerFailedException) t).peer() == 2) {
                        direct = (PeerFailedException) t;
                    }
                }
                assertTrue(direct != null && direct.getMessage().contains("rank 2 closed"), String.valueOf(failures));
            }
        });
    }

    @Test
    void aRankThatFailsMidCallFailsItsPeerAtOnce() {
        assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
            try (Group g = new Group(2, TIMEOUT_NANOS)) {
                g.controls.get(1).markFailed();
                PeerFailedException e = assertThrows(PeerFailedException.class,
                        () -> allReduce(g, 0, "rhd", 10, DataType.INT32, ReduceOp.MAX, true));
                assertEquals(1, e.peer());
            }
        });
    }

    @Test
    void aRankWhoseProcessIsGoneFailsItsPeer() throws Exception {
        Process p = new ProcessBuilder("true").start();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        long deadPid = p.pid();
        assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
            try (Group g = new Group(2, TIMEOUT_NANOS)) {
                // As if rank 1 were another process that died: its state says alive, its pid is gone.
                g.block.set(ValueLayout.JAVA_LONG, DeviceSignals.pidOffset(1), deadPid);
                PeerFailedException e = assertThrows(PeerFailedException.class,
                        () -> allReduce(g, 0, "ring", 10, DataType.FLOAT64, ReduceOp.SUM, false));
                assertEquals(1, e.peer());
                assertTrue(e.getMessage().contains("pid " + deadPid), e.getMessage());
            }
        });
    }

    @Test
    void mismatchedCountsAreAnErrorNotAHang() {
        assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
            try (Group g = new Group(2, TIMEOUT_NANOS)) {
                List<Throwable> failures = onEachRank(2, rank -> {
                    try {
                        allReduce(g, rank, "ring", rank == 0 ? 10 : 12, DataType.FLOAT32, ReduceOp.SUM, true);
                        return null;
                    } catch (RuntimeException e) {
                        return e;
                    }
                });
                boolean named = false;
                for (Throwable t : failures) {
                    assertNotNull(t, "a rank finished a mismatched call");
                    assertFalse(t instanceof CollectiveTimeoutException, String.valueOf(t));
                    named |= t.getMessage().contains("mismatched calls");
                }
                assertTrue(named, String.valueOf(failures));
            }
        });
    }
}
