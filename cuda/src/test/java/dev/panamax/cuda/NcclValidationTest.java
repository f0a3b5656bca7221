package dev.panamax.cuda;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import java.lang.foreign.MemorySegment;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Argument checks of the NCCL API that happen before any native call, so they run without a GPU or libnccl.
 * The context, memory, stream and communicator are made up (their handles point nowhere): a check that came
 * after a native call would fail differently here (no library) rather than pass.
 */
class NcclValidationTest {
    private static final long BASE = 0x7f2a00000000L;
    private static final Duration SECOND = Duration.ofSeconds(1);
    private final CudaContext context = new CudaContext(new CudaDevice(0, 0), MemorySegment.ofAddress(0x1000));
    private final CudaContext other = new CudaContext(new CudaDevice(1, 1), MemorySegment.ofAddress(0x1100));
    /** 64 float32 elements. */
    private final DeviceMemory memory = DeviceMemory.allocated(context, BASE, 256, false);
    private final DeviceMemory foreign = DeviceMemory.allocated(other, BASE + 4096, 256, false);
    private final CudaStream stream = new CudaStream(context, MemorySegment.ofAddress(0x2000));
    private final CudaStream foreignStream = new CudaStream(other, MemorySegment.ofAddress(0x2100));
    /** Rank 1 of 4. */
    private final NcclCommunicator comm = new NcclCommunicator(context, 1, 4, MemorySegment.ofAddress(0x3000), SECOND);
    private final NcclUniqueId id = new NcclUniqueId(new byte[NcclUniqueId.BYTE_SIZE]);

    private static String message(Class<? extends Throwable> type, Executable call) {
        return assertThrows(type, call).getMessage();
    }

    @Test
    void createChecksRanksSizeAndTimeoutFirst() {
        assertEquals("rank 4 is not in [0, 4)", message(IllegalArgumentException.class,
                () -> NcclCommunicator.create(context, 4, 4, id, SECOND)));
        assertEquals("rank -1 is not in [0, 4)", message(IllegalArgumentException.class,
                () -> NcclCommunicator.create(context, -1, 4, id, SECOND)));
        assertEquals("communicator size must be >= 1: 0", message(IllegalArgumentException.class,
                () -> NcclCommunicator.create(context, 0, 0, id, SECOND)));
        assertEquals("timeout must be positive: PT0S", message(IllegalArgumentException.class,
                () -> NcclCommunicator.create(context, 0, 1, id, Duration.ZERO)));
        assertThrows(IllegalArgumentException.class, () ->
                NcclCommunicator.create(context, 0, 1, id, Duration.ofMillis(-1)));
        assertThrows(NullPointerException.class, () -> NcclCommunicator.create(null, 0, 1, id, SECOND));
        assertThrows(NullPointerException.class, () -> NcclCommunicator.create(context, 0, 1, null, SECOND));
        assertThrows(NullPointerException.class, () -> NcclCommunicator.create(context, 0, 1, id, null));
    }

    @Test
    void countsMustBeNonNegative() {
        assertEquals("count must be >= 0: -1", message(IllegalArgumentException.class,
                () -> comm.allReduce(memory, memory, -1, DataType.FLOAT32, ReduceOp.SUM, stream)));
        assertEquals("recvCount must be >= 0: -2", message(IllegalArgumentException.class,
                () -> comm.reduceScatter(memory, memory, -2, DataType.FLOAT32, ReduceOp.SUM, stream)));
        assertEquals("sendCount must be >= 0: -3", message(IllegalArgumentException.class,
                () -> comm.allGather(memory, memory, -3, DataType.FLOAT32, stream)));
        assertThrows(IllegalArgumentException.class, () -> comm.send(memory, -1, DataType.INT8, 0, stream));
        assertThrows(IllegalArgumentException.class, () -> comm.recv(memory, -1, DataType.INT8, 0, stream));
        assertEquals("count 4611686018427387904 of float32 overflows a byte size",
                message(IllegalArgumentException.class,
                () -> comm.allReduce(memory, memory, 1L << 62, DataType.FLOAT32, ReduceOp.SUM, stream)));
    }

    @Test
    void buffersMustHoldTheElements() {
        assertEquals("send buffer device memory 0x7f2a00000000 (256 bytes) on device 0 has 256 bytes; the operation "
                + "needs 260", message(IllegalArgumentException.class,
                () -> comm.allReduce(memory, memory, 65, DataType.FLOAT32, ReduceOp.SUM, stream)));
        DeviceMemory small = memory.slice(0, 255);
        assertThrows(IllegalArgumentException.class,
                () -> comm.allReduce(memory, small, 64, DataType.FLOAT32, ReduceOp.SUM, stream));
        assertThrows(IllegalArgumentException.class,
                () -> comm.allReduce(memory, memory, 33, DataType.FLOAT64, ReduceOp.MAX, stream));
        // reduce-scatter reads size * recvCount elements: 4 * 17 float32 = 272 bytes > 256.
        assertEquals("send buffer device memory 0x7f2a00000000 (256 bytes) on device 0 has 256 bytes; the operation "
                + "needs 272", message(IllegalArgumentException.class,
                () -> comm.reduceScatter(memory, memory.slice(0, 68), 17, DataType.FLOAT32, ReduceOp.SUM, stream)));
        // all-gather writes size * sendCount elements.
        assertEquals("recv buffer view [0, +128) of device memory 0x7f2a00000000 (256 bytes) on device 0 has 128 "
                + "bytes; "
                + "the operation needs 256", message(IllegalArgumentException.class,
                () -> comm.allGather(memory.slice(0, 64), memory.slice(0, 128), 16, DataType.FLOAT32, stream)));
        assertThrows(IllegalArgumentException.class, () ->
                comm.broadcast(memory, memory, 129, DataType.FLOAT16, 0, stream));
        assertThrows(IllegalArgumentException.class, () ->
                comm.reduce(memory, memory, 257, DataType.UINT8, ReduceOp.SUM, 0, stream));
        assertThrows(IllegalArgumentException.class, () -> comm.send(memory, 33, DataType.INT64, 0, stream));
        assertThrows(IllegalArgumentException.class, () -> comm.recv(memory, 129, DataType.BFLOAT16, 0, stream));
    }

    @Test
    void buffersAndStreamsMustBelongToTheCommunicatorsContext() {
        assertEquals("send buffer device memory 0x7f2a00001000 (256 bytes) on device 1 belongs to primary context of "
                + "device 1, not to the context of NCCL communicator rank 1 of 4 on device 0",
                message(IllegalArgumentException.class,
                        () -> comm.allReduce(foreign, memory, 1, DataType.FLOAT32, ReduceOp.SUM, stream)));
        assertThrows(IllegalArgumentException.class, () ->
                comm.allReduce(memory, foreign, 1, DataType.FLOAT32, ReduceOp.SUM, stream));
        assertEquals("stream 0x2100 of device 1 belongs to primary context of device 1, not to the context of NCCL "
                + "communicator rank 1 of 4 on device 0", message(IllegalArgumentException.class,
                () -> comm.allReduce(memory, memory, 1, DataType.FLOAT32, ReduceOp.SUM, foreignStream)));
        assertThrows(IllegalArgumentException.class, () -> comm.send(foreign, 1, DataType.FLOAT32, 0, stream));
        assertThrows(IllegalArgumentException.class, () -> comm.await(foreignStream, SECOND));
    }

    @Test
    void rootsAndPeersMustBeRanks() {
        assertEquals("root 4 is not a rank of NCCL communicator rank 1 of 4 on device 0 (0..3)",
                message(IllegalArgumentException.class,
                        () -> comm.broadcast(memory, memory, 1, DataType.INT32, 4, stream)));
        assertThrows(IllegalArgumentException.class, () ->
                comm.reduce(memory, memory, 1, DataType.INT32, ReduceOp.MIN, -1, stream));
        assertEquals("peer -1 is not a rank of NCCL communicator rank 1 of 4 on device 0 (0..3)",
                message(IllegalArgumentException.class, () -> comm.send(memory, 1, DataType.INT32, -1, stream)));
        assertThrows(IllegalArgumentException.class, () -> comm.recv(memory, 1, DataType.INT32, 4, stream));
    }

    @Test
    void requiredArgumentsAreNotNull() {
        assertThrows(NullPointerException.class, () ->
                comm.allReduce(null, memory, 1, DataType.FLOAT32, ReduceOp.SUM, stream));
        assertThrows(NullPointerException.class, () -> comm.allReduce(memory, memory, 1, null, ReduceOp.SUM, stream));
        assertThrows(NullPointerException.class, () ->
                comm.allReduce(memory, memory, 1, DataType.FLOAT32, null, stream));
        assertThrows(NullPointerException.class, () ->
                comm.allReduce(memory, memory, 1, DataType.FLOAT32, ReduceOp.SUM, null));
        // The root (rank 1 here) must give what it sends in a broadcast and where it receives a reduction.
        assertThrows(NullPointerException.class, () -> comm.broadcast(null, memory, 1, DataType.INT8, 1, stream));
        assertThrows(NullPointerException.class, () ->
                comm.reduce(memory, null, 1, DataType.INT8, ReduceOp.SUM, 1, stream));
        assertThrows(NullPointerException.class, () -> comm.await(stream, null));
        assertThrows(IllegalArgumentException.class, () -> comm.await(stream, Duration.ZERO));
    }

    @Test
    void groupEndWithoutGroupStartIsRefused() {
        assertEquals("groupEnd() without groupStart() on this thread",
                message(IllegalStateException.class, NcclCommunicator::groupEnd));
    }

    @Test
    void accessorsAndDescription() {
        assertEquals(1, comm.rank());
        assertEquals(4, comm.size());
        assertEquals(context, comm.context());
        assertEquals(SECOND, comm.timeout());
        assertEquals(0x3000, comm.handle().address());
        assertEquals("NCCL communicator rank 1 of 4 on device 0", comm.toString());
    }

    @Test
    void versionCodesAreFormatted() {
        assertEquals("2.28.5", Nccl.versionString(22805));
        assertEquals("2.18.1", Nccl.versionString(21801));
        assertEquals("2.7.8", Nccl.versionString(2708));
        assertEquals("3.0.0", Nccl.versionString(30000));
        assertThrows(IllegalArgumentException.class, () -> Nccl.versionString(-1));
    }
}
