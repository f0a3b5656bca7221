package dev.panamax.lightgbm;

import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.testing.RankThreads;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import org.junit.jupiter.api.Test;

/**
 * Data-parallel training with ranks as threads of this JVM (LightGBM's network state is per thread): over
 * Panamax, over LightGBM's own sockets, and the two compared; LightGBM's reducer called from Java; a failing
 * collective reported on both ranks without killing the JVM.
 */
class LightGbmDistributedTest {
    private static final int RANKS = 2;
    private static final int ITERATIONS = 10;
    /** num_machines makes LightGBM's config keep tree_learner=data (with 1 it falls back to serial). */
    private static final String PARAMS = "objective=binary tree_learner=data num_machines=" + RANKS
            + " num_iterations=" + ITERATIONS + " num_leaves=15 num_threads=1 deterministic=true"
            + " force_row_wise=true verbose=-1 pre_partition=true seed=7";
    private static final BinaryData DATA = BinaryData.generate(20240611L, 4000, 8);
    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    /** What one rank ends with. */
    record Trained(String model, double[] predictions, int[] upcalls) {
    }

    /** Trains this rank's part of {@link #DATA} on the current thread, inside {@code session}. */
    private static Trained train(int rank, NetworkSession session) {
        BinaryData part = DATA.part(rank, RANKS);
        try (Dataset train = Dataset.fromMatrix(part.features(), part.rows(), part.cols(), PARAMS)) {
            train.setLabels(part.labels());
            try (Booster booster = Booster.create(train, PARAMS)) {
                for (int i = 0; i < ITERATIONS; i++) {
                    booster.updateOneIteration();
                }
                double[] p = booster.predict(DATA.features(), DATA.rows(), DATA.cols(), LightGbmC.PREDICT_NORMAL, "");
                return new Trained(booster.modelString(), p, session.upcalls());
            }
        }
    }

    private static List<Trained> overPanamax(Function<Communicator, LightGbmNetwork> networkOf) {
        List<Communicator> comms = Panamax.local(RANKS, TIMEOUT.toNanos());
        try {
            return RankThreads.onEach(comms, comm -> {
                LightGbmNetwork network = networkOf.apply(comm);
                try (NetworkSession session = NetworkSession.external(network)) {
                    return train(comm.rank(), session);
                } finally {
                    if (network instanceof AutoCloseable c) {
                        c.close();
                    }
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    private static List<Trained> overSockets() {
        int[] ports = LocalSocketNetworkTest.distinctPorts(RANKS);
        String machines = LocalSocketNetwork.machineList(ports);
        return RankThreads.onEachRank(RANKS, rank -> {
            try (NetworkSession session = NetworkSession.sockets(machines, ports[rank], 1, RANKS)) {
                return train(rank, session);
            }
        });
    }

    @Test
    void trainsOverPanamaxWithTheSameModelOnEveryRank() {
        List<Trained> ranks = overPanamax(CommunicatorNetwork::new);
        Trained first = ranks.get(0);
        assertTrue(first.model().contains("Tree=" + (ITERATIONS - 1) + "\n"), "all trees are in the model");
        assertTrue(first.model().contains("tree_learner: data"), "trained data-parallel");
        for (Trained t : ranks) {
            assertEquals(first.model(), t.model(), "the same model on every rank");
            assertTrue(t.upcalls()[0] > 0 && t.upcalls()[1] > 0,
                    "LightGBM called both collectives back: " + t.upcalls()[0] + ", " + t.upcalls()[1]);
        }
        assertTrue(DATA.accuracy(first.predictions()) > 0.8, "accuracy " + DATA.accuracy(first.predictions()));
        assertNotEquals(trees(trainAlone(DATA.part(0, RANKS))), trees(first.model()),
                "the trees are not those of rank 0's rows alone");
    }

    @Test
    void panamaxAndLightGbmsSocketsTrainTheSameModel() {
        List<Trained> panamax = overPanamax(CommunicatorNetwork::new);
        List<Trained> sockets = overSockets();
        assertEquals(sockets.get(0).model(), sockets.get(1).model(), "sockets: the same model on both ranks");
        assertEquals(trees(sockets.get(0).model()), trees(panamax.get(0).model()), "the same trees");
        double[] expected = sockets.get(0).predictions();
        double[] actual = panamax.get(0).predictions();
        assertEquals(expected.length, actual.length);
        for (int i = 0; i < expected.length; i++) {
            assertEquals(expected[i], actual[i], 1e-6, "prediction of row " + i);
        }
    }

    /** The model text up to the parameters section (which may differ in settings that do not shape trees). */
    private static String trees(String model) {
        int end = model.indexOf("\nparameters:");
        return end < 0 ? model : model.substring(0, end);
    }

    @Test
    void lightGbmsReducerSumsHistogramEntriesAsJavaDoes() {
        AtomicInteger checked = new AtomicInteger();
        overPanamax(comm -> new CheckingNetwork(new CommunicatorNetwork(comm), checked));
        assertTrue(checked.get() > 1000, "histogram entries checked: " + checked.get());
    }

    /** Before each reduce-scatter, reduces two of its input blocks with LightGBM's reducer and with Java. */
    private record CheckingNetwork(CommunicatorNetwork inner, AtomicInteger checked)
            implements ForwardingNetwork, AutoCloseable {
        @Override
        public void reduceScatter(MemorySegment input, int typeSize, int[] blockStart, int[] blockLen,
                MemorySegment output, LightGbmReducer reducer) {
            assertEquals(Double.BYTES, typeSize, "histogram entries are doubles");
            int len = Math.min(blockLen[0], blockLen[1]) / typeSize * typeSize;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment in = arena.allocate(len, 8).copyFrom(input.asSlice(blockStart[0], len));
                MemorySegment inout = arena.allocate(len, 8).copyFrom(input.asSlice(blockStart[1], len));
                double[] a = in.toArray(JAVA_DOUBLE);
                double[] b = inout.toArray(JAVA_DOUBLE);
                reducer.reduce(in, inout, typeSize, len);
                double[] sum = inout.toArray(JAVA_DOUBLE);
                for (int i = 0; i < a.length; i++) {
                    assertEquals(Double.doubleToRawLongBits(b[i] + a[i]), Double.doubleToRawLongBits(sum[i]),
                            "entry " + i + ": " + b[i] + " + " + a[i]);
                }
                checked.addAndGet(a.length);
            }
            inner.reduceScatter(input, typeSize, blockStart, blockLen, output, reducer);
        }

        @Override
        public void close() {
            inner.close();
        }
    }

    @Test
    void aCollectiveThatFailsInAnUpcallIsThrownOnBothRanksAndTheJvmLives() {
        List<Communicator> comms = Panamax.local(RANKS, TIMEOUT.toNanos());
        List<RuntimeException> failures;
        try {
            failures = RankThreads.onEach(comms, comm -> {
                CommunicatorNetwork inner = new CommunicatorNetwork(comm);
                LightGbmNetwork network = comm.rank() == 1 ? new FailingNetwork(inner) : inner;
                try (NetworkSession session = NetworkSession.external(network)) {
                    train(comm.rank(), session);
                    return null;
                } catch (RuntimeException e) {
                    return e;
                } finally {
                    inner.close();
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
        LightGbmNetworkException failed = assertInstanceOf(LightGbmNetworkException.class, failures.get(1));
        assertEquals(1, failed.rank());
        assertTrue(failed.getMessage().startsWith("rank 1: the reduce-scatter"), failed.getMessage());
        assertEquals("injected", failed.getCause().getMessage());
        // Rank 0 was waiting for rank 1 in the same collective: the abort ends that wait at once.
        LightGbmNetworkException peer = assertInstanceOf(LightGbmNetworkException.class, failures.get(0));
        assertEquals(0, peer.rank());
        assertInstanceOf(PeerFailedException.class, peer.getCause());
        // The JVM and LightGBM still work: train again, alone.
        assertTrue(trainAlone(DATA).contains("Tree=" + (ITERATIONS - 1) + "\n"));
    }

    /** The model of {@code data} trained on one machine, on this thread (which is in no network session). */
    private static String trainAlone(BinaryData data) {
        String params = PARAMS.replace("tree_learner=data", "tree_learner=serial").replace("num_machines=2", "");
        try (Dataset train = Dataset.fromMatrix(data.features(), data.rows(), data.cols(), params)) {
            train.setLabels(data.labels());
            try (Booster booster = Booster.create(train, params)) {
                for (int i = 0; i < ITERATIONS; i++) {
                    booster.updateOneIteration();
                }
                return booster.modelString();
            }
        }
    }

    /** Throws in its first reduce-scatter, which LightGBM calls in the first training iteration. */
    private record FailingNetwork(CommunicatorNetwork inner) implements ForwardingNetwork {
        @Override
        public void reduceScatter(MemorySegment input, int typeSize, int[] blockStart, int[] blockLen,
                MemorySegment output, LightGbmReducer reducer) {
            throw new IllegalStateException("injected");
        }
    }

    /** A test network that passes every call to {@link #inner()} unless it overrides it. */
    private interface ForwardingNetwork extends LightGbmNetwork {
        CommunicatorNetwork inner();

        @Override
        default int rank() {
            return inner().rank();
        }

        @Override
        default int size() {
            return inner().size();
        }

        @Override
        default void reduceScatter(MemorySegment input, int typeSize, int[] blockStart, int[] blockLen,
                MemorySegment output, LightGbmReducer reducer) {
            inner().reduceScatter(input, typeSize, blockStart, blockLen, output, reducer);
        }

        @Override
        default void allGather(MemorySegment input, int[] blockStart, int[] blockLen, MemorySegment output) {
            inner().allGather(input, blockStart, blockLen, output);
        }

        @Override
        default void abandon(Throwable cause) {
            inner().abandon(cause);
        }
    }
}
