package dev.panamax.ml;

import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.memory.DataType;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GradientSynchronizerTest {
    /** Tensor sizes in float32 elements, in backward order: small ones between large ones, a prime, an empty one. */
    static final long[] COUNTS = {1, 7, 1000, 3, 50_000, 0, 13, 2, 4099};
    static final int ITERATIONS = 3;

    /** Element j of tensor t on a rank in an iteration: small integers, so sums are exact in float32. */
    static float input(int rank, int it, int t, long j) {
        return rank + 10 * it + (t + j) % 5;
    }

    /**
     * Runs ITERATIONS iterations on every rank: fills the gradients, marks them ready in backward
     * order (sleeping {@code gapNanos} between tensors), waits, and checks the average (or sum)
     * element by element. Returns each rank's final layer types.
     */
    static List<LayerType[]> train(int n, UnaryOperator<GradientSynchronizer.Builder> configure, boolean average,
            long gapNanos, int iterations) {
        return LocalRanks.run(n, comm -> {
            try (Arena arena = Arena.ofShared();
                 GradientSynchronizer sync = configure.apply(GradientSynchronizer.builder(comm).average(average))
                         .build()) {
                List<MemorySegment> grads = new ArrayList<>();
                for (long c : COUNTS) {
                    MemorySegment g = arena.allocate(Math.max(4, 4 * c), 64);
                    grads.add(g);
                    sync.register(g, c, DataType.FLOAT32);
                }
                for (int it = 0; it < iterations; it++) {
                    for (int t = 0; t < COUNTS.length; t++) {
                        for (long j = 0; j < COUNTS[t]; j++) {
                            grads.get(t).setAtIndex(ValueLayout.JAVA_FLOAT, j, input(comm.rank(), it, t, j));
                        }
                        if (gapNanos > 0) {
                            LockSupport.parkNanos(gapNanos);
                        }
                        sync.markReady(t);
                    }
                    sync.awaitAll();
                    for (int t = 0; t < COUNTS.length; t++) {
                        for (long j = 0; j < COUNTS[t]; j++) {
                            double sum = 0;
                            for (int r = 0; r < n; r++) {
                                sum += input(r, it, t, j);
                            }
                            double want = average ? sum / n : sum;
                            float got = grads.get(t).getAtIndex(ValueLayout.JAVA_FLOAT, j);
                            if (Math.abs(got - want) > 1e-5 * Math.max(1, Math.abs(want))) {
                                throw new AssertionError("rank " + comm.rank() + " iteration " + it + " tensor " + t
                                        + " element " + j
                                        + ": " + got + ", expected " + want + " (types "
                                        + Arrays.toString(sync.layerTypes()) + ")");
                            }
                        }
                    }
                }
                return sync.layerTypes();
            }
        });
    }

    static double[] zeros() {
        return new double[COUNTS.length];
    }

    @Test
    void wfbpAveragesAndSums() {
        for (int n : new int[]{1, 2, 3}) {
            for (LayerType t : train(n, b -> b.policy(SyncPolicy.WFBP), true, 0, ITERATIONS).getFirst()) {
                assertEquals(LayerType.NORMAL, t);
            }
            train(n, b -> b.policy(SyncPolicy.WFBP), false, 0, ITERATIONS);
        }
    }

    /** A startup of 1 ms against 1 ns/B, every tensor ready at once: MG-WFBP merges, through the fusion buffer. */
    @Test
    void mgWfbpMergesAndAverages() {
        AllReduceModel m = new AllReduceModel(1e-3, 1e-9, 1.5);
        for (int n : new int[]{1, 2, 3}) {
            List<LayerType[]> types = train(n, b -> b.policy(SyncPolicy.MG_WFBP).model(m).backwardSeconds(zeros()),
                    true, 0, ITERATIONS);
            assertTrue(Arrays.asList(types.getFirst()).contains(LayerType.MERGED), Arrays.toString(types.getFirst()));
            assertSame(types);
        }
    }

    /** With gamma = 1 two all-reduces at once cost as much as the larger: ASC-WFBP pairs them (and merges some). */
    @Test
    void ascWfbpRunsAllReducesTogetherAndAverages() {
        AllReduceModel m = new AllReduceModel(1e-3, 1e-9, 1.0);
        for (int n : new int[]{1, 2, 3}) {
            for (boolean average : new boolean[]{true, false}) {
                List<LayerType[]> types = train(n, b -> b.policy(SyncPolicy.ASC_WFBP).model(m).backwardSeconds(zeros()),
                        average, 0,
                        ITERATIONS);
                List<LayerType> first = Arrays.asList(types.getFirst());
                assertTrue(first.contains(LayerType.SIMULTANEOUS) && first.contains(LayerType.MERGED),
                        first.toString());
                assertSame(types);
            }
        }
    }

    /**
     * The inputs are small integers, which bfloat16 holds exactly, so the bf16 hook must give the same sums and
     * averages as float32: one tensor at a time, and through the fusion buffer and the paired all-reduces.
     */
    @Test
    void bf16CompressionCarriesEveryPlan() {
        AllReduceModel m = new AllReduceModel(1e-3, 1e-9, 1.0);
        for (int n : new int[]{1, 2, 3}) {
            for (boolean average : new boolean[]{true, false}) {
                train(n, b -> b.policy(SyncPolicy.WFBP).compression(GradientCompression.bf16()), average, 0,
                        ITERATIONS);
                List<LayerType[]> types = train(n, b -> b.policy(SyncPolicy.ASC_WFBP).model(m)
                        .backwardSeconds(zeros()).compression(GradientCompression.bf16()), average, 0, ITERATIONS);
                List<LayerType> first = Arrays.asList(types.getFirst());
                assertTrue(first.contains(LayerType.SIMULTANEOUS) && first.contains(LayerType.MERGED),
                        first.toString());
            }
        }
    }

    /**
     * Without backward times the first iterations are timed (under WFBP), then the plan is decided:
     * tensor 4 is marked 3 ms after tensor 3, so the measured profile shows it, and every rank
     * follows the same plan.
     */
    @Test
    void profilesThenDecides() {
        AllReduceModel m = new AllReduceModel(1e-3, 1e-9, 1.0);
        List<BackwardProfile> profiles = new ArrayList<>();
        List<LayerType[]> types = LocalRanks.run(2, comm -> {
            try (Arena arena = Arena.ofShared();
                 GradientSynchronizer sync = GradientSynchronizer.builder(comm).policy(SyncPolicy.ASC_WFBP).model(m)
                         .profileIterations(2)
                         .build()) {
                MemorySegment[] g = new MemorySegment[6];
                for (int t = 0; t < g.length; t++) {
                    g[t] = arena.allocate(4L * (t + 1), 64);
                    sync.register(g[t], t + 1, DataType.FLOAT32);
                }
                for (int it = 0; it < 4; it++) {
                    if (it < 2) {
                        assertTrue(Arrays.stream(sync.layerTypes() == null ? new LayerType[0] : sync.layerTypes())
                                .allMatch(x -> x == LayerType.NORMAL));
                    }
                    for (int t = 0; t < g.length; t++) {
                        g[t].fill((byte) 0);
                        g[t].set(ValueLayout.JAVA_FLOAT, 0, comm.rank() + it);
                        if (t == 4) {
                            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(3));
                        }
                        sync.markReady(t);
                    }
                    sync.awaitAll();
                    for (MemorySegment s : g) {
                        assertEquals(0.5f + it, s.get(ValueLayout.JAVA_FLOAT, 0));
                    }
                }
                synchronized (profiles) {
                    profiles.add(sync.profile());
                }
                return sync.layerTypes();
            }
        });
        assertSame(types);
        assertEquals(profiles.get(0), profiles.get(1));
        double[] t = profiles.getFirst().backwardSeconds();
        assertTrue(t[4] >= 2.5e-3, "tensor 4's measured backward time " + t[4]);
        assertEquals(0, t[0]);
        assertArrayEquals(new long[]{4, 8, 12, 16, 20, 24}, profiles.getFirst().bytes());
    }

    @Test
    void misuseIsReported() {
        LocalRanks.run(1, comm -> {
            try (Arena arena = Arena.ofShared(); Arena confined = Arena.ofConfined();
                 GradientSynchronizer sync = GradientSynchronizer.builder(comm).policy(SyncPolicy.WFBP).build()) {
                assertNull(sync.layerTypes());
                MemorySegment a = arena.allocate(64, 64);
                assertThrows(IllegalArgumentException.class, () ->
                        sync.register(confined.allocate(64, 64), 4, DataType.FLOAT32));
                assertThrows(IllegalArgumentException.class, () ->
                        sync.register(MemorySegment.ofArray(new float[4]), 4, DataType.FLOAT32));
                assertThrows(IllegalArgumentException.class, () -> sync.register(a, 17, DataType.FLOAT32));
                assertEquals(0, sync.register(a.asSlice(0, 16), 4, DataType.FLOAT32));
                assertThrows(IllegalArgumentException.class, () ->
                        sync.register(a.asSlice(16, 16), 2, DataType.FLOAT64));
                assertEquals(1, sync.register(a.asSlice(16, 16), 4, DataType.FLOAT32));
                assertThrows(IllegalStateException.class, sync::awaitAll);
                try (GradientSynchronizer bf16 = GradientSynchronizer.builder(comm).policy(SyncPolicy.WFBP)
                        .compression(GradientCompression.bf16()).build()) {
                    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () ->
                            bf16.register(a.asSlice(32, 16), 4, DataType.INT32));
                    assertTrue(e.getMessage().contains("int32"), e.getMessage());
                }
                sync.markReady(0);
                assertThrows(IllegalStateException.class, () -> sync.markReady(0));
                assertThrows(IllegalArgumentException.class, () -> sync.markReady(2));
                assertThrows(IllegalStateException.class, () -> sync.register(a.asSlice(32, 16), 4, DataType.FLOAT32));
                assertThrows(IllegalStateException.class, sync::awaitAll);
                sync.markReady(1);
                sync.awaitAll();
                sync.markReady(0);
                sync.markReady(1);
                sync.awaitAll();
                sync.close();
                assertThrows(IllegalStateException.class, () -> sync.markReady(0));
            }
            return null;
        });
    }

    /** An iteration whose peer is late times out on this rank; waiting again once the peer has caught up succeeds. */
    @Test
    void timedOutWaitCanBeRetried() {
        CountDownLatch timedOut = new CountDownLatch(1);
        LocalRanks.run(2, comm -> {
            try (Arena arena = Arena.ofShared();
                 GradientSynchronizer sync = GradientSynchronizer.builder(comm).policy(SyncPolicy.WFBP).build()) {
                MemorySegment g = arena.allocate(16, 64);
                g.fill((byte) 0);
                sync.register(g, 4, DataType.FLOAT32);
                if (comm.rank() == 0) {
                    sync.markReady(0);
                    assertThrows(CollectiveTimeoutException.class, () -> sync.awaitAll(Duration.ofMillis(200)));
                    timedOut.countDown();
                    sync.awaitAll();
                } else {
                    assertTrue(timedOut.await(30, TimeUnit.SECONDS));
                    sync.markReady(0);
                    sync.awaitAll();
                }
            }
            return null;
        });
    }

    static void assertSame(List<LayerType[]> perRank) {
        for (LayerType[] t : perRank) {
            assertArrayEquals(perRank.getFirst(), t);
        }
    }
}
