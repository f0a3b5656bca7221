package dev.panamax.cuda;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What {@link ReductionKernels} checks before any driver call, the grid rule, the kernel names and the module
 * image; no GPU needed. The context, module, kernels, stream and memory are made up (their handles point
 * nowhere), so a check that came after a driver call would fail here (no libcuda, or a crash on the made-up
 * handles) rather than pass.
 */
class ReductionKernelsValidationTest {
    private static final long BASE = 0x7f2a00000000L;
    private static final int MULTIPROCESSORS = 132;

    private final CudaContext context = new CudaContext(new CudaDevice(0, 0), MemorySegment.ofAddress(0x1000));
    private final DeviceMemory a = DeviceMemory.allocated(context, BASE, 4096, false);
    private final DeviceMemory b = DeviceMemory.allocated(context, BASE + 8192, 4096, false);
    private final CudaStream stream = new CudaStream(context, MemorySegment.ofAddress(0x2000));
    private final ReductionKernels kernels = fakeKernels(context);

    private static ReductionKernels fakeKernels(CudaContext context) {
        MemorySegment[] reduce = new MemorySegment[4 * DataType.values().length];
        MemorySegment[] divide = new MemorySegment[DataType.values().length];
        Arrays.fill(reduce, MemorySegment.ofAddress(0x5000));
        Arrays.fill(divide, MemorySegment.ofAddress(0x6000));
        return new ReductionKernels(context, MemorySegment.ofAddress(0x4000), MULTIPROCESSORS, 60L << 20, reduce,
                divide);
    }

    @Test
    void countsMustBeNonNegativeAndFitInBytes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> kernels.reduce(ReduceOp.SUM, DataType.FLOAT32, a, b, -1, stream));
        assertEquals("count must be >= 0: -1", e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> kernels.reduce(ReduceOp.SUM, DataType.FLOAT64, a, b, Long.MAX_VALUE / 4, stream));
        assertEquals("count too large: " + Long.MAX_VALUE / 4 + " elements of float64", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> kernels.divide(DataType.INT32, a, -1, 2, stream));
    }

    @Test
    void operandsMustHoldCountElements() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> kernels.reduce(ReduceOp.MAX, DataType.FLOAT32, a, b, 1025, stream));
        assertEquals("inout has 4096 bytes, 1025 elements of float32 need 4100: device memory 0x7f2a00000000 "
                + "(4096 bytes) on device 0", e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> kernels.reduce(ReduceOp.MAX, DataType.INT64, a, b.slice(0, 4088), 512, stream));
        assertTrue(e.getMessage().startsWith("in has 4088 bytes, 512 elements of int64 need 4096"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> kernels.divide(DataType.FLOAT16, a, 2049, 2, stream));
    }

    @Test
    void addressesMustBeElementAligned() {
        DeviceMemory odd = a.slice(2, 1024);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> kernels.reduce(ReduceOp.SUM, DataType.FLOAT32, odd, b, 10, stream));
        assertEquals("inout address 0x7f2a00000002 is not a multiple of 4 (the size of float32): view [2, +1024) of "
                + "device memory 0x7f2a00000000 (4096 bytes) on device 0", e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> kernels.reduce(ReduceOp.SUM, DataType.FLOAT64, a, b.slice(4, 1024), 10, stream));
        assertTrue(e.getMessage().startsWith("in address 0x7f2a00002004 is not a multiple of 8"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () ->
                kernels.divide(DataType.BFLOAT16, a.slice(1, 100), 10, 3, stream));
        // Element alignment is enough: 2-byte types at odd element offsets, bytes anywhere.
        kernels.reduce(ReduceOp.SUM, DataType.FLOAT16, a.slice(2, 100), b.slice(6, 100), 0, stream);
        kernels.reduce(ReduceOp.SUM, DataType.UINT8, a.slice(3, 100), b.slice(1, 100), 0, stream);
    }

    @Test
    void partiallyOverlappingOperandsAreRejectedButTheSameRangeIsAllowed() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> kernels.reduce(ReduceOp.SUM, DataType.INT32, a, a.slice(4, 400), 100, stream));
        assertEquals("in and inout must be disjoint or the same range: 100 elements of int32 at 0x7f2a00000004 and "
                + "0x7f2a00000000 overlap", e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> kernels.reduce(ReduceOp.SUM, DataType.INT32, a.slice(396, 400), a, 100, stream));
        // Adjacent ranges and the same range are fine (count 0: nothing is launched).
        kernels.reduce(ReduceOp.SUM, DataType.INT32, a, a.slice(400, 400), 0, stream);
        kernels.reduce(ReduceOp.SUM, DataType.INT32, a, a, 0, stream);
    }

    @Test
    void everythingMustBelongToTheKernelsContext() {
        CudaContext other = new CudaContext(new CudaDevice(1, 1), MemorySegment.ofAddress(0x9000));
        DeviceMemory foreign = DeviceMemory.allocated(other, BASE + 65536, 4096, false);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> kernels.reduce(ReduceOp.SUM, DataType.FLOAT32, foreign, b, 1, stream));
        assertEquals("inout belongs to primary context of device 1, the kernels to primary context of device 0: "
                + "device memory 0x7f2a00010000 (4096 bytes) on device 1", e.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> kernels.reduce(ReduceOp.SUM, DataType.FLOAT32, a, foreign, 1, stream));
        CudaStream foreignStream = new CudaStream(other, MemorySegment.ofAddress(0xa000));
        e = assertThrows(IllegalArgumentException.class,
                () -> kernels.divide(DataType.FLOAT32, a, 1, 2, foreignStream));
        assertEquals("the stream belongs to primary context of device 1, the kernels to primary context of device 0: "
                + "stream 0xa000 of device 1", e.getMessage());
    }

    @Test
    void divisorsMustBePositive() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> kernels.divide(DataType.FLOAT32, a, 10, 0, stream));
        assertEquals("divisor must be >= 1: 0", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> kernels.divide(DataType.INT8, a, 10, -3, stream));
    }

    @Test
    void nullArgumentsAreNamed() {
        assertEquals("op", assertThrows(NullPointerException.class,
                () -> kernels.reduce(null, DataType.FLOAT32, a, b, 1, stream)).getMessage());
        assertEquals("in", assertThrows(NullPointerException.class,
                () -> kernels.reduce(ReduceOp.SUM, DataType.FLOAT32, a, null, 1, stream)).getMessage());
        assertEquals("stream", assertThrows(NullPointerException.class,
                () -> kernels.divide(DataType.FLOAT32, a, 1, 2, null)).getMessage());
    }

    @Test
    void zeroCountsAndDivisionByOneLaunchNothing() {
        for (ReduceOp op : ReduceOp.values()) {
            for (DataType type : DataType.values()) {
                kernels.reduce(op, type, a, b, 0, stream);
                kernels.divide(type, a, 0, 7, stream);
                kernels.divide(type, a, 512, 1, stream);
            }
        }
        kernels.reduce(ReduceOp.SUM, DataType.FLOAT64, a.slice(4096, 0), b.slice(0, 0), 0, stream);
        assertTrue(kernels.isOpen()); // reaching here means no call reached the (absent) driver
    }

    @Test
    void gridGivesEachThreadOnePackAndFillsTheGpuAtMostWhileTheOperandsFitInL2() {
        long l2 = 60L << 20;
        // 256 threads x 16 bytes = 4096 bytes per block and pass.
        assertEquals(1, ReductionKernels.gridSize(0, 4, MULTIPROCESSORS, l2));
        assertEquals(1, ReductionKernels.gridSize(1, 4, MULTIPROCESSORS, l2));
        assertEquals(1, ReductionKernels.gridSize(1024, 4, MULTIPROCESSORS, l2));
        assertEquals(2, ReductionKernels.gridSize(1025, 4, MULTIPROCESSORS, l2));
        assertEquals(1, ReductionKernels.gridSize(4096, 1, MULTIPROCESSORS, l2));
        assertEquals(3, ReductionKernels.gridSize(1025, 8, MULTIPROCESSORS, l2));
        assertEquals(100, ReductionKernels.gridSize(100 * 2048, 2, MULTIPROCESSORS, l2));
        // 30 MiB operands: two fit in 60 MiB, so a full GPU loops over them
        assertEquals(8 * MULTIPROCESSORS, ReductionKernels.gridSize(30L << 18, 4, MULTIPROCESSORS, l2));
        // one element more: a thread per pack
        assertEquals((30 << 8) + 1, ReductionKernels.gridSize((30L << 18) + 1, 4, MULTIPROCESSORS, l2));
        assertEquals(1 << 18, ReductionKernels.gridSize(1L << 28, 4, MULTIPROCESSORS, l2));
        // without L2 (an attribute of 0) every grid is a thread per pack; the grid's limit holds
        assertEquals(1 << 18, ReductionKernels.gridSize(1L << 28, 4, MULTIPROCESSORS, 0));
        assertEquals(Integer.MAX_VALUE, ReductionKernels.gridSize(Long.MAX_VALUE / 8, 8, MULTIPROCESSORS, l2));
    }

    @ParameterizedTest
    @EnumSource(DataType.class)
    void kernelNamesFollowThePtxAndAvgIsSum(DataType type) {
        String suffix = ReducePtxTest.suffix(type);
        assertEquals("panamax_reduce_sum_" + suffix, ReductionKernels.reduceKernelName(ReduceOp.AVG, type));
        assertEquals("panamax_reduce_prod_" + suffix, ReductionKernels.reduceKernelName(ReduceOp.PROD, type));
        assertEquals("panamax_reduce_min_" + suffix, ReductionKernels.reduceKernelName(ReduceOp.MIN, type));
        assertEquals("panamax_reduce_max_" + suffix, ReductionKernels.reduceKernelName(ReduceOp.MAX, type));
        assertEquals("panamax_divide_" + suffix, ReductionKernels.divideKernelName(type));
    }

    @Test
    void theModuleImageIsThePtxWithATrailingNul() throws Exception {
        byte[] ptx;
        try (var in = ReductionKernels.class.getResourceAsStream(ReductionKernels.RESOURCE)) {
            ptx = in.readAllBytes();
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment image = ReductionKernels.image(arena);
            assertEquals(ptx.length + 1, image.byteSize());
            assertEquals(0, image.get(ValueLayout.JAVA_BYTE, ptx.length));
            assertEquals(new String(ptx, StandardCharsets.US_ASCII), image.getString(0, StandardCharsets.US_ASCII));
            assertTrue(image.getString(0).startsWith("// Generated by scripts/gpu/build-ptx"));
        }
    }
}
