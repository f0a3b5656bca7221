package dev.panamax.collectives.internal.device;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.GpuBackend;
import dev.panamax.collectives.Panamax;
import dev.panamax.collectives.Topology;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.Reference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
import java.lang.foreign.ValueLayout;

/**
 * {@link DeviceBlueConnect} with the own stages on every level, over in-JVM host communicators and
 * host-memory devices: each level's groups split from the host communicator, each with its own
 * control block, the vector padded and copied where the count is not a multiple of the ranks,
 * checked element by element against a reference for every operator and type.
 */
class DeviceBlueConnectTest {
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** Counts below the rank count, primes, a multiple of every tested rank count (840), a large prime. */
    private static final long[] COUNTS = {0, 1, 2, 3, 5, 7, 13, 97, 840, 4099};

    /** Runs {@code body} on every rank of {@code host} in a thread of its own, then closes the communicators. */
    private static <T> List<T> withRanks(List<Communicator> host, IntFunction<T> body) {
        try {
            return DeviceScheduleExecutorTest.onEachRank(host.size(), body);
        } finally {
            for (Communicator c : host) {
                c.close();
            }
        }
    }

    /** One all-reduce; returns the first wrong element's description, or null. */
    private static String allReduce(DeviceBlueConnect<MemorySegment> bc, long count, DataType type, ReduceOp op,
            boolean inPlace) {
        int e = type.byteSize();
        int rank = bc.rank();
        int n = bc.size();
        try (Arena a = Arena.ofShared()) {
            // 16 guard bytes after the result must stay untouched
            MemorySegment send = a.allocate(count * e + 16, 64);
            MemorySegment recv = inPlace ? send : a.allocate(count * e + 16, 64);
            for (long i = 0; i < count; i++) {
                type.setFromDouble(send, 0, i, Reference.input(rank, i, type, op));
            }
            send.asSlice(count * e).fill((byte) 0x77);
            if (!inPlace) {
                recv.fill((byte) 0x5a);
            }
            bc.allReduce(send, recv, count, type, op);
            String what = bc.describe() + " rank " + rank + " " + type + " " + op + " count " + count + (inPlace
                    ? " in place" : "");
            for (long i = 0; i < count; i++) {
                double want = Reference.expected(i, n, type, op);
                double got = type.getAsDouble(recv, 0, i);
                double tol = Reference.tolerance(type);
                boolean ok = type.isFloatingPoint() ? Math.abs(got - want) <= tol * Math.max(1, Math.abs(want)) : got
                        == want;
                if (!ok) {
                    return what + ": element " + i + " is " + got + ", expected " + want;
                }
            }
            byte guard = inPlace ? (byte) 0x77 : (byte) 0x5a;
            for (long b = count * e; b < count * e + 16; b++) {
                if (recv.get(ValueLayout.JAVA_BYTE, b) != guard) {
                    return what + ": byte " + b + " after the result was written";
                }
            }
            return null;
        }
    }

    @ParameterizedTest(name = "topology {0}")
    @CsvSource({"2x2", "3x2", "2x3", "2x2x2", "4", "1x3", "3x1x2"})
    void allReduceMatchesTheReference(String spec) {
        Topology t = Topology.parse(spec);
        EmulatedDeviceOps.Fabric fabric = new EmulatedDeviceOps.Fabric();
        List<Communicator> host = Panamax.local(t.size(), TIMEOUT_NANOS);
        List<List<String>> wrong = withRanks(host, rank -> {
            List<String> errors = new ArrayList<>();
            try (DeviceBlueConnect<MemorySegment> bc = DeviceBlueConnect.hostMemory(host.get(rank), t, fabric, false)) {
                int call = 0;
                for (DataType type : DataType.values()) {
                    for (ReduceOp op : ReduceOp.values()) {
                        for (long count : COUNTS) {
                            // the largest count for a third of the combinations: they cost the most
                            if (count > 1000 && (op.ordinal() + type.ordinal()) % 3 != 0) {
                                continue;
                            }
                            String err = allReduce(bc, count, type, op, call++ % 2 == 1);
                            if (err != null) {
                                errors.add(err);
                            }
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

    @Test
    void describesTheLevelsThatRun() {
        Topology t = Topology.parse("3x1x2");
        EmulatedDeviceOps.Fabric fabric = new EmulatedDeviceOps.Fabric();
        List<Communicator> host = Panamax.local(6, TIMEOUT_NANOS);
        List<String> d = withRanks(host, rank -> {
            try (DeviceBlueConnect<MemorySegment> bc = DeviceBlueConnect.hostMemory(host.get(rank), t, fabric, false)) {
                return bc.describe();
            }
        });
        assertEquals(List.of("blueconnect(3x2: stages ring, stages rhd)"), d.stream().distinct().toList());
    }

    @Test
    void unitLevelsRunWhenAskedFor() {
        // Groups of one rank on the inner level: how a one-GPU machine runs an NCCL level (1x2 = 2 "nodes" of 1).
        Topology t = Topology.parse("1x2");
        EmulatedDeviceOps.Fabric fabric = new EmulatedDeviceOps.Fabric();
        List<Communicator> host = Panamax.local(2, TIMEOUT_NANOS);
        List<String> errors = withRanks(host, rank -> {
            try (DeviceBlueConnect<MemorySegment> bc = DeviceBlueConnect.hostMemory(host.get(rank), t, fabric, true)) {
                assertEquals("blueconnect(1x2: stages rhd, stages rhd)", bc.describe());
                for (long count : new long[] {0, 1, 3, 1000}) {
                    for (ReduceOp op : ReduceOp.values()) {
                        String err = allReduce(bc, count, DataType.INT32, op, count % 2 == 1);
                        if (err != null) {
                            return err;
                        }
                    }
                }
            }
            return null;
        });
        for (String e : errors) {
            assertEquals(null, e);
        }
    }

    @Test
    void topologyAndBackendsMustFit() {
        List<Communicator> host = Panamax.local(1, TIMEOUT_NANOS);
        try {
            IllegalArgumentException size = assertThrows(IllegalArgumentException.class,
                    () -> DeviceBlueConnect.check(host.get(0), Topology.parse("2x2"),
                            List.of(GpuBackend.NCCL, GpuBackend.STAGES)));
            assertTrue(size.getMessage().contains("4 ranks, the communicator 1"), size.getMessage());
            IllegalArgumentException levels = assertThrows(IllegalArgumentException.class,
                    () -> DeviceBlueConnect.check(host.get(0), Topology.parse("1x1"), List.of(GpuBackend.NCCL)));
            assertTrue(levels.getMessage().contains("1 level backends [NCCL] for the 2 levels"), levels.getMessage());
        } finally {
            host.getFirst().close();
        }
    }

    @Test
    void aBufferTooSmallIsRefusedBeforeAnythingMoves() {
        List<Communicator> host = Panamax.local(1, TIMEOUT_NANOS);
        try (DeviceBlueConnect<MemorySegment> bc =
                DeviceBlueConnect.hostMemory(host.get(0), Topology.parse("1"), new EmulatedDeviceOps.Fabric(), false);
             Arena a = Arena.ofConfined()) {
            MemorySegment s = a.allocate(40);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> bc.allReduce(s, s, 11, DataType.FLOAT32, ReduceOp.SUM));
            assertTrue(e.getMessage().contains("smaller than the call's 44 bytes"), e.getMessage());
            // still usable: nothing was started
            assertEquals(null, allReduce(bc, 10, DataType.FLOAT32, ReduceOp.SUM, true));
        } finally {
            host.getFirst().close();
        }
    }

    @Test
    void mismatchedCountsFailNamingTheRankAndLevelNotAHang() {
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
            Topology t = Topology.parse("2x2");
            EmulatedDeviceOps.Fabric fabric = new EmulatedDeviceOps.Fabric();
            List<Communicator> host = Panamax.local(4, TimeUnit.SECONDS.toNanos(3));
            List<Throwable> failures = withRanks(host, rank -> {
                DeviceBlueConnect<MemorySegment> bc = DeviceBlueConnect.hostMemory(host.get(rank), t, fabric, false);
                try {
                    allReduce(bc, rank == 3 ? 1200 : 1000, DataType.FLOAT32, ReduceOp.SUM, false);
                    return null;
                } catch (RuntimeException e) {
                    // the failure leaves it unusable rather than out of step with its peers
                    IllegalStateException again = assertThrows(IllegalStateException.class,
                            () -> allReduce(bc, 10, DataType.FLOAT32, ReduceOp.SUM, false));
                    assertTrue(again.getMessage().contains("earlier BlueConnect all-reduce failed"),
                            again.getMessage());
                    return e;
                } finally {
                    try {
                        bc.close();
                    } catch (RuntimeException ignored) {
                        // a peer that failed may leave the closing barrier unanswered
                    }
                }
            });
            boolean named = false;
            for (int r = 0; r < failures.size(); r++) {
                Throwable f = failures.get(r);
                if (f == null) {
                    continue; // a rank whose groups all agreed may finish
                }
                assertInstanceOf(CollectiveException.class, f);
                assertTrue(f.getMessage().startsWith("rank " + r + ": level "), f.getMessage());
                named |= f.getMessage().contains("mismatched calls") || f instanceof CollectiveTimeoutException;
            }
            assertNotNull(failures.get(3), "the rank with the other count finished");
            assertTrue(named, String.valueOf(failures));
            assertFalse(failures.stream().allMatch(f -> f == null));
        });
    }
}
