package dev.panamax.collectives.internal.device;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@link StagesBackend} over in-JVM host communicators with host-memory devices: the control block
 * set up through the host communicator (a /dev/shm file named by broadcast), and the ring's
 * reduce-scatter, all-gather and broadcast besides the all-reduce, checked element by element.
 */
class StagesBackendTest {
    private static int value(int rank, long i) {
        return (int) ((rank * 131 + i * 7) % 1000);
    }

    @ParameterizedTest(name = "{0} ranks, {1}")
    @CsvSource({"2,ring", "3,ring", "4,ring", "4,rhd", "3,rhd"})
    void collectivesOverTheHostCommunicator(int n, String algorithm) {
        List<Communicator> host = Panamax.local(n, TimeUnit.SECONDS.toNanos(20));
        EmulatedDeviceOps.Fabric fabric = new EmulatedDeviceOps.Fabric();
        try {
            DeviceScheduleExecutorTest.onEachRank(n, r -> {
                try (StagesBackend<MemorySegment> g = StagesBackend.hostMemory(host.get(r), fabric); Arena a =
                        Arena.ofShared()) {
                    for (long count : new long[] {0, 1, 5, 4099}) {
                        MemorySegment buf = a.allocate(Math.max(4, count * n * 4), 64);
                        MemorySegment out = a.allocate(Math.max(4, count * n * 4), 64);
                        // all-reduce, in place
                        for (long i = 0; i < count; i++) {
                            buf.setAtIndex(ValueLayout.JAVA_INT, i, value(r, i));
                        }
                        g.run(Collective.ALL_REDUCE, algorithm, buf, buf, count, DataType.INT32, ReduceOp.SUM, 0);
                        for (long i = 0; i < count; i++) {
                            int want = 0;
                            for (int q = 0; q < n; q++) {
                                want += value(q, i);
                            }
                            assertEquals(want, buf.getAtIndex(ValueLayout.JAVA_INT, i),
                                    "all-reduce element " + i + " on rank " + r);
                        }
                        boolean pow2 = Integer.bitCount(n) == 1;
                        String rsag = algorithm.equals("rhd") && !pow2 ? "ring" : algorithm;
                        // reduce-scatter: block r of every rank's n*count elements
                        for (long i = 0; i < count * n; i++) {
                            buf.setAtIndex(ValueLayout.JAVA_INT, i, value(r, i));
                        }
                        g.run(Collective.REDUCE_SCATTER, rsag, buf, out, count, DataType.INT32, ReduceOp.MAX, 0);
                        for (long i = 0; i < count; i++) {
                            int want = Integer.MIN_VALUE;
                            for (int q = 0; q < n; q++) {
                                want = Math.max(want, value(q, r * count + i));
                            }
                            assertEquals(want, out.getAtIndex(ValueLayout.JAVA_INT, i),
                                    "reduce-scatter element " + i + " on rank " + r);
                        }
                        // all-gather: block q from rank q
                        for (long i = 0; i < count; i++) {
                            buf.setAtIndex(ValueLayout.JAVA_INT, i, value(r, i) + 1);
                        }
                        g.run(Collective.ALL_GATHER, rsag, buf, out, count, DataType.INT32, ReduceOp.SUM, 0);
                        for (int q = 0; q < n; q++) {
                            for (long i = 0; i < count; i++) {
                                assertEquals(value(q, i) + 1, out.getAtIndex(ValueLayout.JAVA_INT, q * count + i),
                                        "all-gather block " + q + " on rank " + r);
                            }
                        }
                        // broadcast from the last rank
                        int root = n - 1;
                        for (long i = 0; i < count; i++) {
                            buf.setAtIndex(ValueLayout.JAVA_INT, i, r == root ? value(r, i) : -1);
                        }
                        g.run(Collective.BROADCAST, "ring", buf, buf, count, DataType.INT32, ReduceOp.SUM, root);
                        for (long i = 0; i < count; i++) {
                            assertEquals(value(root, i), buf.getAtIndex(ValueLayout.JAVA_INT, i),
                                    "broadcast element " + i + " on rank " + r);
                        }
                    }
                }
                return null;
            });
        } finally {
            for (Communicator c : host) {
                c.close();
            }
        }
    }
}
