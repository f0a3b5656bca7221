package dev.panamax.ml;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.LaunchConfig;
import dev.panamax.collectives.Panamax;
import dev.panamax.collectives.TransportKind;
import dev.panamax.memory.DataType;
import dev.panamax.testing.Ports;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link ElasticTraining}: SGD on a linear regression over 4 ranks (threads as ranks, each with its
 * own connection to the job's store); rank 2 is lost in the middle of a step, the survivors recover
 * and go on with 3 ranks, then a fresh process joins and they go on with 4. Every global batch is
 * split over the ranks of the moment, so the parameters must end where one process training on the
 * same global batches ends (up to rounding), on every rank, the joiner included.
 */
class ElasticTrainingTest {
    private static final int FEATURES = 5;
    private static final int GLOBAL_BATCH = 12; // divisible by 3 and 4
    private static final int STEPS = 30;
    private static final int LOST_AT = 7;
    private static final int GROW_AT = 16;
    private static final double LEARNING_RATE = 0.05;

    /** Sample i of the data: x in R^FEATURES and y = a fixed linear function plus a wobble. */
    private static double[] x(long i) {
        double[] x = new double[FEATURES];
        for (int j = 0; j < FEATURES; j++) {
            x[j] = Math.sin(0.37 * i + 1.3 * j) + 0.1 * j;
        }
        return x;
    }

    private static double y(long i) {
        double[] x = x(i);
        double y = 0.5;
        for (int j = 0; j < FEATURES; j++) {
            y += (j - 2) * x[j];
        }
        return y + 0.05 * Math.cos(i);
    }

    /** The mean-squared-error gradient over samples [from, to) of step s's global batch, into {@code g}. */
    private static void gradient(double[] params, long step, int from, int to, double[] g) {
        Arrays.fill(g, 0);
        for (int k = from; k < to; k++) {
            long i = step * GLOBAL_BATCH + k;
            double[] x = x(i);
            double err = params[FEATURES] - y(i);
            for (int j = 0; j < FEATURES; j++) {
                err += params[j] * x[j];
            }
            for (int j = 0; j < FEATURES; j++) {
                g[j] += 2 * err * x[j] / (to - from);
            }
            g[FEATURES] += 2 * err / (to - from);
        }
    }

    /** The parameters before the first step (not zeros: a lost start would show). */
    private static double[] initial() {
        double[] p = new double[FEATURES + 1];
        for (int j = 0; j <= FEATURES; j++) {
            p[j] = 0.3 - 0.1 * j;
        }
        return p;
    }

    private static double[] trainAlone() {
        double[] p = initial();
        double[] g = new double[FEATURES + 1];
        for (long s = 0; s < STEPS; s++) {
            gradient(p, s, 0, GLOBAL_BATCH, g);
            for (int j = 0; j <= FEATURES; j++) {
                p[j] -= LEARNING_RATE * g[j];
            }
        }
        return p;
    }

    /**
     * One rank's training; rank {@code lost} aborts its communicator in the middle of step LOST_AT and
     * leaves. Returns the final parameters, or null for the lost rank.
     */
    private static double[] train(ElasticTraining t, MemorySegment state, MemorySegment grad, int lost, int jobRank) {
        double[] p = new double[FEATURES + 1];
        double[] g = new double[FEATURES + 1];
        MemorySegment.copy(state, ValueLayout.JAVA_DOUBLE, 0, p, 0, p.length);
        while (t.step() < STEPS) {
            long s = t.step();
            try {
                if (s == GROW_AT && t.communicator().size() < 4) {
                    t.grow(4 - t.communicator().size());
                    MemorySegment.copy(state, ValueLayout.JAVA_DOUBLE, 0, p, 0, p.length);
                }
                Communicator c = t.communicator();
                int share = GLOBAL_BATCH / c.size();
                gradient(p, s, c.rank() * share, (c.rank() + 1) * share, g);
                MemorySegment.copy(g, 0, grad, ValueLayout.JAVA_DOUBLE, 0, g.length);
                if (jobRank == lost && s == LOST_AT) {
                    c.abort(); // lost in the middle of the step, as a killed process would be
                    return null;
                }
                t.markReady(0);
                t.awaitAll();
                for (int j = 0; j <= FEATURES; j++) {
                    p[j] -= LEARNING_RATE * grad.getAtIndex(ValueLayout.JAVA_DOUBLE, j);
                }
                MemorySegment.copy(p, 0, state, ValueLayout.JAVA_DOUBLE, 0, p.length);
                t.commit();
            } catch (CollectiveException e) {
                t.recover();
                MemorySegment.copy(state, ValueLayout.JAVA_DOUBLE, 0, p, 0, p.length);
            }
        }
        return p;
    }

    enum Transport { SHM, TCP }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void aLostRankAndAJoinerLeaveTheTrainingWhereOneProcessEndsIt(Transport transport) {
        int n = 4;
        int lost = 2;
        int port = Ports.freePort();
        TransportKind kind = transport == Transport.SHM ? TransportKind.SHM : TransportKind.TCP;
        double[] alone = trainAlone();
        List<List<ElasticTraining.Event>> events = new ArrayList<>(List.of(List.of(), List.of(), List.of(), List.of(),
                List.of()));
        // Ranks 0-3 of the job, and (as rank 4 here) the process that joins at the grow.
        List<double[]> out = RankThreads.onEachRank(n + 1, r -> {
            boolean joiner = r == n;
            try (Arena a = Arena.ofShared()) {
                MemorySegment state = a.allocate(8L * (FEATURES + 1), 64);
                if (!joiner) {
                    MemorySegment.copy(initial(), 0, state, ValueLayout.JAVA_DOUBLE, 0, FEATURES + 1);
                }
                MemorySegment grad = a.allocate(8L * (FEATURES + 1), 64);
                var builder = Panamax.builder().config(new LaunchConfig(joiner ? 0 : r, n, 0, "127.0.0.1", port))
                        .transport(kind).timeout(Duration.ofSeconds(20));
                Communicator comm = joiner ? builder.join() : builder.connect();
                try (ElasticTraining t = ElasticTraining.builder(comm)
                        .synchronizer(b -> b.policy(SyncPolicy.WFBP))
                        .gradient(grad, FEATURES + 1, DataType.FLOAT64).state(state).joined(joiner).build()) {
                    double[] p = train(t, state, grad, lost, r);
                    events.set(r, t.events());
                    return p;
                } finally {
                    comm.close();
                }
            }
        });
        for (int r = 0; r <= n; r++) {
            if (r == lost) {
                continue;
            }
            double[] p = out.get(r);
            for (int j = 0; j <= FEATURES; j++) {
                assertEquals(alone[j], p[j], 1e-12 * Math.max(1, Math.abs(alone[j])), "rank " + r + " parameter " + j);
            }
        }
        List<ElasticTraining.Event> e0 = events.get(0);
        assertEquals(2, e0.size(), e0.toString());
        assertEquals("shrink", e0.get(0).kind());
        assertEquals(LOST_AT, e0.get(0).step());
        assertEquals(4, e0.get(0).fromSize());
        assertEquals(3, e0.get(0).toSize());
        assertEquals("grow", e0.get(1).kind());
        assertEquals(GROW_AT, e0.get(1).step());
        assertEquals(4, e0.get(1).toSize());
        assertTrue(events.get(n).isEmpty(), "the joiner saw " + events.get(n));
    }
}
