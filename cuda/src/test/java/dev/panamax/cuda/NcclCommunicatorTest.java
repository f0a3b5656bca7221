package dev.panamax.cuda;

import dev.panamax.bindings.nccl.nccl_h;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.GpuTest;
import dev.panamax.testing.GpuTestSupport;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * NCCL on the test device: a one-rank communicator runs every operation, each result checked element by
 * element against a host reference, with guard bytes after every output to catch writes past it (a wrong
 * element size would show there). With one rank every reduction returns its input; the two-rank test, which
 * tells the operators apart, needs two devices.
 */
@GpuTest
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NcclCommunicatorTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(120);
    /** Odd, and not a multiple of any vector width. */
    private static final long COUNT = 1037;
    private static final long GUARD_BYTES = 256;
    private static final byte GUARD = (byte) 0x5A;

    private CudaContext context;
    private CudaStream stream;
    private NcclCommunicator comm;

    /** Before each test, so that each one is reported skipped, with the reason, without a GPU or NCCL. */
    @BeforeEach
    void setUp() {
        if (comm == null) {
            context = CudaTestDevice.ncclContext();
            stream = context.createStream();
            comm = NcclCommunicator.create(context, 0, 1, Nccl.newUniqueId(), TIMEOUT);
        }
    }

    @AfterAll
    void tearDown() {
        if (comm != null) {
            comm.close();
        }
        if (context != null) {
            context.close();
        }
    }

    static Stream<Arguments> typesOpsPlacements() {
        List<Arguments> all = new ArrayList<>();
        for (DataType type : DataType.values()) {
            for (ReduceOp op : ReduceOp.values()) {
                all.add(Arguments.of(type, op, false));
                all.add(Arguments.of(type, op, true));
            }
        }
        return all.stream();
    }

    @Test
    void theCommunicatorIsReadyAndHealthy() {
        assertEquals(0, comm.rank());
        assertEquals(1, comm.size());
        assertTrue(comm.isUsable());
        assertTrue(comm.asyncError().isEmpty());
        assertTrue(Nccl.version() >= 21800, Nccl.versionString());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment n = arena.allocate(ValueLayout.JAVA_INT);
            assertEquals(0, nccl_h.ncclCommCount(comm.handle(), n));
            assertEquals(1, n.get(ValueLayout.JAVA_INT, 0));
            assertEquals(0, nccl_h.ncclCommCuDevice(comm.handle(), n));
            assertEquals(context.device().ordinal(), n.get(ValueLayout.JAVA_INT, 0));
        }
    }

    @ParameterizedTest(name = "{0} {1} in place {2}")
    @MethodSource("typesOpsPlacements")
    void allReduceMatchesTheHostReference(DataType type, ReduceOp op, boolean inPlace) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = values(arena, type, COUNT, 1, 0);
            MemorySegment expected = reference(arena, type, op, COUNT, List.of(in));
            long bytes = COUNT * type.byteSize();
            try (DeviceMemory send = upload(in); DeviceMemory recv = inPlace ? null : blank(bytes)) {
                DeviceMemory out = inPlace ? send : recv;
                comm.allReduce(send.slice(0, bytes), out.slice(0, bytes), COUNT, type, op, stream);
                comm.await(stream, TIMEOUT);
                assertElements(out, expected, type, COUNT, "allReduce " + type + " " + op);
                if (!inPlace) {
                    assertElements(send, in, type, COUNT, "allReduce send buffer");
                }
            }
        }
        assertTrue(comm.asyncError().isEmpty());
    }

    @ParameterizedTest
    @EnumSource(DataType.class)
    void reduceScatterOfOneRankKeepsItsBlock(DataType type) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = values(arena, type, COUNT, 2, 0);
            long bytes = COUNT * type.byteSize();
            try (DeviceMemory send = upload(in); DeviceMemory recv = blank(bytes)) {
                comm.reduceScatter(send.slice(0, bytes), recv.slice(0, bytes), COUNT, type, ReduceOp.SUM, stream);
                comm.await(stream, TIMEOUT);
                assertElements(recv, reference(arena, type, ReduceOp.SUM, COUNT, List.of(in)), type, COUNT,
                        "reduceScatter " + type);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(DataType.class)
    void allGatherOfOneRankCopiesItsBlock(DataType type) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = values(arena, type, COUNT, 3, 0);
            long bytes = COUNT * type.byteSize();
            try (DeviceMemory send = upload(in); DeviceMemory recv = blank(bytes)) {
                comm.allGather(send.slice(0, bytes), recv.slice(0, bytes), COUNT, type, stream);
                comm.await(stream, TIMEOUT);
                assertElements(recv, in, type, COUNT, "allGather " + type);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(DataType.class)
    void broadcastFromTheRootInAndOutOfPlace(DataType type) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = values(arena, type, COUNT, 4, 0);
            long bytes = COUNT * type.byteSize();
            try (DeviceMemory send = upload(in); DeviceMemory recv = blank(bytes)) {
                comm.broadcast(send.slice(0, bytes), recv.slice(0, bytes), COUNT, type, 0, stream);
                comm.broadcast(send.slice(0, bytes), send.slice(0, bytes), COUNT, type, 0, stream);
                comm.await(stream, TIMEOUT);
                assertElements(recv, in, type, COUNT, "broadcast " + type);
                assertElements(send, in, type, COUNT, "in-place broadcast " + type);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(ReduceOp.class)
    void reduceToTheRoot(ReduceOp op) {
        for (DataType type : DataType.values()) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment in = values(arena, type, COUNT, 5, 0);
                long bytes = COUNT * type.byteSize();
                try (DeviceMemory send = upload(in); DeviceMemory recv = blank(bytes)) {
                    comm.reduce(send.slice(0, bytes), recv.slice(0, bytes), COUNT, type, op, 0, stream);
                    comm.await(stream, TIMEOUT);
                    assertElements(recv, reference(arena, type, op, COUNT, List.of(in)), type, COUNT,
                            "reduce " + type + " " + op);
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(DataType.class)
    void sendAndReceiveToItselfInAGroup(DataType type) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = values(arena, type, COUNT, 6, 0);
            long bytes = COUNT * type.byteSize();
            try (DeviceMemory send = upload(in); DeviceMemory recv = blank(bytes)) {
                NcclCommunicator.groupStart();
                try {
                    comm.send(send.slice(0, bytes), COUNT, type, 0, stream);
                    comm.recv(recv.slice(0, bytes), COUNT, type, 0, stream);
                } finally {
                    NcclCommunicator.groupEnd();
                }
                comm.await(stream, TIMEOUT);
                assertElements(recv, in, type, COUNT, "send/recv " + type);
            }
        }
    }

    @Test
    void zeroElementsLeaveTheOutputAlone() {
        try (DeviceMemory send = blank(64); DeviceMemory recv = blank(64)) {
            comm.allReduce(send.slice(0, 0), recv.slice(0, 0), 0, DataType.FLOAT32, ReduceOp.SUM, stream);
            comm.await(stream, TIMEOUT);
            assertElements(recv, MemorySegment.NULL, DataType.FLOAT32, 0, "empty allReduce");
        }
    }

    @Test
    void finishThenCloseReleasesOnce() {
        NcclCommunicator c = NcclCommunicator.create(context, 0, 1, Nccl.newUniqueId(), TIMEOUT);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = values(arena, DataType.INT32, COUNT, 7, 0);
            try (DeviceMemory buffer = upload(in)) {
                DeviceMemory data = buffer.slice(0, COUNT * 4);
                c.allReduce(data, data, COUNT, DataType.INT32, ReduceOp.SUM, stream);
                c.finish(); // flushes the all-reduce
                assertFalse(c.isUsable());
                c.finish(); // nothing more to do
                assertThrows(IllegalStateException.class,
                        () -> c.allReduce(data, data, COUNT, DataType.INT32, ReduceOp.SUM, stream));
                c.close();
                c.close();
                assertThrows(IllegalStateException.class, c::handle);
                assertThrows(IllegalStateException.class, c::asyncError);
                stream.synchronize();
                assertElements(buffer, in, DataType.INT32, COUNT, "all-reduce before finish");
            }
        }
    }

    @Test
    void closeWithoutFinishFinalizesAndDestroys() {
        NcclCommunicator c = NcclCommunicator.create(context, 0, 1, Nccl.newUniqueId(), TIMEOUT);
        c.close();
        assertFalse(c.isUsable());
        IllegalStateException e = assertThrows(IllegalStateException.class, c::asyncError);
        assertEquals(c + " is no longer usable: closed", e.getMessage());
    }

    @Test
    void abortReleasesAndLaterCallsAreRefused() {
        NcclCommunicator c = NcclCommunicator.create(context, 0, 1, Nccl.newUniqueId(), TIMEOUT);
        c.abort();
        assertFalse(c.isUsable());
        IllegalStateException e = assertThrows(IllegalStateException.class, c::asyncError);
        assertEquals(c + " is no longer usable: aborted by abort()", e.getMessage());
        c.abort();
        c.close();
    }

    @Test
    @Timeout(value = 180, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aCreationThatCannotCompleteTimesOutAndAborts() {
        // Rank 1 never comes: the non-blocking creation stays ncclInProgress until the timeout.
        NcclException e = assertThrows(NcclException.class,
                () -> NcclCommunicator.create(context, 0, 2, Nccl.newUniqueId(), Duration.ofSeconds(3)));
        assertTrue(e.isTimeout(), e.getMessage());
        assertEquals("ncclInProgress", e.resultName());
        assertTrue(e.getMessage().startsWith("ncclCommInitRankConfig(rank 0 of 2, blocking 0) did not finish within "
                + "3000 ms; the communicator was aborted"), e.getMessage());
    }

    /**
     * Two ranks, one thread and one device each. NCCL does not support two ranks of one communicator on the
     * same device ("Using the same CUDA device multiple times as different ranks of the same NCCL communicator
     * is not supported and may lead to hangs", NCCL user guide, Creating a Communicator), so this needs two.
     */
    @Test
    void twoRanksOnTwoDevicesReduceGatherScatterAndExchange() throws Exception {
        int devices = Cuda.deviceCount();
        if (devices < 2) {
            // Two ranks need two devices: NCCL does not support two ranks of one communicator on one device.
            GpuTestSupport.tooFewDevices(2, devices);
        }
        NcclUniqueId id = Nccl.newUniqueId();
        RankThreads.onEachRank(2, Duration.ofSeconds(600), rank -> {
            runRank(rank, id);
            return null;
        });
    }

    private static void runRank(int rank, NcclUniqueId id) {
        try (CudaContext ctx = Cuda.device(rank).retainPrimaryContext();
             CudaStream s = ctx.createStream();
             NcclCommunicator c = NcclCommunicator.create(ctx, rank, 2, id, TIMEOUT);
             Arena arena = Arena.ofConfined()) {
            for (DataType type : DataType.values()) {
                long bytes = COUNT * type.byteSize();
                List<MemorySegment> inputs = List.of(values(arena, type, COUNT, 8, 0), values(arena, type, COUNT, 8,
                        1));
                for (ReduceOp op : ReduceOp.values()) {
                    try (DeviceMemory send = upload(ctx, inputs.get(rank)); DeviceMemory recv = blank(ctx, bytes)) {
                        c.allReduce(send.slice(0, bytes), recv.slice(0, bytes), COUNT, type, op, s);
                        c.await(s, TIMEOUT);
                        assertElements(recv, reference(arena, type, op, COUNT, inputs), type, COUNT,
                                "rank " + rank + " allReduce " + type + " " + op);
                    }
                }
                MemorySegment both = arena.allocate(2 * bytes);
                MemorySegment.copy(inputs.get(0), 0, both, 0, bytes);
                MemorySegment.copy(inputs.get(1), 0, both, bytes, bytes);
                try (DeviceMemory send = upload(ctx, inputs.get(rank)); DeviceMemory recv = blank(ctx, 2 * bytes)) {
                    c.allGather(send.slice(0, bytes), recv.slice(0, 2 * bytes), COUNT, type, s);
                    c.await(s, TIMEOUT);
                    assertElements(recv, both, type, 2 * COUNT, "rank " + rank + " allGather " + type);
                }
                // Reduce-scatter of [in_r, in_r]: block b of the sum is in_0 + in_1 for both blocks.
                MemorySegment mine = arena.allocate(2 * bytes);
                MemorySegment.copy(inputs.get(rank), 0, mine, 0, bytes);
                MemorySegment.copy(inputs.get(rank), 0, mine, bytes, bytes);
                try (DeviceMemory send = upload(ctx, mine); DeviceMemory recv = blank(ctx, bytes)) {
                    c.reduceScatter(send.slice(0, 2 * bytes), recv.slice(0, bytes), COUNT, type, ReduceOp.SUM, s);
                    c.await(s, TIMEOUT);
                    assertElements(recv, reference(arena, type, ReduceOp.SUM, COUNT, inputs), type, COUNT,
                            "rank " + rank + " reduceScatter " + type);
                }
                // Exchange: each rank sends its input to the other.
                try (DeviceMemory send = upload(ctx, inputs.get(rank)); DeviceMemory recv = blank(ctx, bytes)) {
                    NcclCommunicator.groupStart();
                    try {
                        c.send(send.slice(0, bytes), COUNT, type, 1 - rank, s);
                        c.recv(recv.slice(0, bytes), COUNT, type, 1 - rank, s);
                    } finally {
                        NcclCommunicator.groupEnd();
                    }
                    c.await(s, TIMEOUT);
                    assertElements(recv, inputs.get(1 - rank), type, COUNT, "rank " + rank + " send/recv " + type);
                }
            }
            assertTrue(c.asyncError().isEmpty());
            c.finish();
        }
    }

    // ---- data and checks ----

    /**
     * Small integers, exact in every type, so that sums, products and averages of two ranks are exact too:
     * rank 1's values are rank 0's plus 2 (the sum is even, the average exact).
     */
    static MemorySegment values(Arena arena, DataType type, long count, int seed, int rank) {
        MemorySegment s = arena.allocate(Math.max(1, count * type.byteSize()), 8);
        for (long i = 0; i < count; i++) {
            long v = Math.floorMod(i * 7 + seed * 3L, 11) - 5 + 2L * rank;
            type.setFromDouble(s, 0, i, type == DataType.UINT8 ? v + 5 : v);
        }
        return s;
    }

    /** The element-wise reduction of {@code inputs} as NCCL defines it (AVG: sum divided by the rank count). */
    static MemorySegment reference(Arena arena, DataType type, ReduceOp op, long count, List<MemorySegment> inputs) {
        MemorySegment out = arena.allocate(Math.max(1, count * type.byteSize()), 8);
        for (long i = 0; i < count; i++) {
            double acc = type.getAsDouble(inputs.get(0), 0, i);
            for (int r = 1; r < inputs.size(); r++) {
                double v = type.getAsDouble(inputs.get(r), 0, i);
                acc = switch (op) {
                    case SUM, AVG -> acc + v;
                    case PROD -> acc * v;
                    case MIN -> Math.min(acc, v);
                    case MAX -> Math.max(acc, v);
                };
            }
            if (op == ReduceOp.AVG) {
                acc /= inputs.size(); // exact for these inputs, also for the integer types
            }
            type.setFromDouble(out, 0, i, acc);
        }
        return out;
    }

    private DeviceMemory upload(MemorySegment host) {
        return upload(context, host);
    }

    private DeviceMemory blank(long bytes) {
        return blank(context, bytes);
    }

    /** Device memory holding {@code host}, followed by guard bytes. */
    static DeviceMemory upload(CudaContext ctx, MemorySegment host) {
        DeviceMemory m = blank(ctx, host.byteSize());
        m.slice(0, host.byteSize()).copyFromHost(host);
        return m;
    }

    /** {@code bytes} plus guard bytes of device memory, all set to the guard value. */
    static DeviceMemory blank(CudaContext ctx, long bytes) {
        DeviceMemory m = ctx.allocate(bytes + GUARD_BYTES);
        m.fill(GUARD);
        return m;
    }

    /** Compares the first {@code count} elements with {@code expected} and checks that the rest is guard bytes. */
    static void assertElements(DeviceMemory actual, MemorySegment expected, DataType type, long count, String what) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(actual.byteSize());
            actual.copyToHost(host);
            for (long i = 0; i < count; i++) {
                double e = type.getAsDouble(expected, 0, i);
                double a = type.getAsDouble(host, 0, i);
                if (e != a) {
                    fail(what + ": element " + i + " of " + count + ": expected " + e + ", got " + a);
                }
            }
            for (long b = count * type.byteSize(); b < host.byteSize(); b++) {
                if (host.get(ValueLayout.JAVA_BYTE, b) != GUARD) {
                    fail(what + ": byte " + b + ", past the " + count + " elements, was overwritten");
                }
            }
        }
    }
}
