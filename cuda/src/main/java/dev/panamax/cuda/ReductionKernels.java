package dev.panamax.cuda;

import dev.panamax.bindings.cuda.cuda_h;
import dev.panamax.memory.internal.Closer;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

import static dev.panamax.cuda.CudaCalls.hex;

/**
 * The GPU reduction kernels of {@code reduce.ptx} loaded into a context: the device counterpart of
 * {@link dev.panamax.memory.Reductions#accumulate} and {@link dev.panamax.memory.Reductions#divide}, with the
 * same results bit for bit (NaN payloads aside); see docs/design/gpu-kernels.md.
 *
 * <p>{@link #load} loads the module once ({@code cuModuleLoadData}: the driver compiles the PTX for the device)
 * and looks up every kernel ({@code cuModuleGetFunction}). Launches are asynchronous on the given stream: the
 * operands must stay allocated until the stream has run them, and errors of the running kernel show at the
 * next synchronization. Every argument is checked before any driver call.
 *
 * <p>The module is unloaded ({@code cuModuleUnload}) exactly once, by the first of {@link #close()} and its
 * context's close; closing again does nothing. Usable from any thread (each launch makes the context current);
 * closing while another thread launches is not supported.
 */
public final class ReductionKernels implements AutoCloseable {
    /** The kernels declare {@code .maxntid 256}. */
    static final int BLOCK_THREADS = 256;
    /** Resident blocks of 256 threads per multiprocessor on sm_80 and sm_90 (2048 threads). */
    static final int BLOCKS_PER_MULTIPROCESSOR = 8;
    /** Each thread moves one 16-byte pack per pass of the grid-stride loop. */
    static final int PACK_BYTES = 16;
    static final String RESOURCE = "reduce.ptx";

    private static final ReduceOp[] PAIRWISE = {ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MIN, ReduceOp.MAX};
    private static final DataType[] TYPES = DataType.values();

    private final CudaContext context;
    private final MemorySegment module;
    private final int multiprocessorCount;
    private final long l2CacheBytes;
    /** {@code CUfunction}s of the reduce kernels, at {@link #reduceIndex}. */
    private final MemorySegment[] reduceFunctions;
    /** {@code CUfunction}s of the divide kernels, at {@code type.ordinal()}. */
    private final MemorySegment[] divideFunctions;
    private final AtomicBoolean closed = new AtomicBoolean();

    ReductionKernels(CudaContext context, MemorySegment module, int multiprocessorCount, long l2CacheBytes,
                     MemorySegment[] reduceFunctions, MemorySegment[] divideFunctions) {
        this.context = context;
        this.module = module;
        this.multiprocessorCount = multiprocessorCount;
        this.l2CacheBytes = l2CacheBytes;
        this.reduceFunctions = reduceFunctions;
        this.divideFunctions = divideFunctions;
    }

    /**
     * Loads the kernels into {@code context} ({@code cuModuleLoadData}, then {@code cuModuleGetFunction} for each
     * of the 40 kernels). The context owns the result: its close unloads the module if still loaded.
     *
     * @throws CudaException when the driver refuses the module, for example
     *                       {@code CUDA_ERROR_UNSUPPORTED_PTX_VERSION} from a driver older than CUDA 13.0
     */
    public static ReductionKernels load(CudaContext context) {
        Objects.requireNonNull(context, "context");
        synchronized (context) {
            context.requireOpen();
            int multiprocessors = context.device().attribute(cuda_h.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT());
            long l2CacheBytes = context.device().attribute(cuda_h.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE());
            context.setCurrent();
            MemorySegment module;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment p = arena.allocate(ValueLayout.ADDRESS);
                // The driver compiles the image during the call and keeps no reference to it.
                CudaCalls.check(cuda_h.cuModuleLoadData(p, image(arena)),
                        "cuModuleLoadData(" + RESOURCE + ", " + context + ")");
                module = p.get(ValueLayout.ADDRESS, 0);
            }
            ReductionKernels kernels;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment p = arena.allocate(ValueLayout.ADDRESS);
                MemorySegment[] reduce = new MemorySegment[PAIRWISE.length * TYPES.length];
                MemorySegment[] divide = new MemorySegment[TYPES.length];
                for (DataType type : TYPES) {
                    for (ReduceOp op : PAIRWISE) {
                        reduce[reduceIndex(op, type)] = function(arena, p, module, reduceKernelName(op, type));
                    }
                    divide[type.ordinal()] = function(arena, p, module, divideKernelName(type));
                }
                kernels = new ReductionKernels(context, module, multiprocessors, l2CacheBytes, reduce, divide);
            } catch (RuntimeException | Error e) {
                int rc = cuda_h.cuModuleUnload(module);
                if (rc != 0) {
                    e.addSuppressed(CudaCalls.error("cuModuleUnload(" + RESOURCE + ")", rc));
                }
                throw e;
            }
            context.adopt(kernels);
            return kernels;
        }
    }

    private static MemorySegment function(Arena arena, MemorySegment p, MemorySegment module, String name) {
        CudaCalls.check(cuda_h.cuModuleGetFunction(p, module, arena.allocateFrom(name)),
                "cuModuleGetFunction(" + name + ")");
        return p.get(ValueLayout.ADDRESS, 0);
    }

    /** The PTX resource in native memory with the trailing NUL that {@code cuModuleLoadData} needs. */
    static MemorySegment image(Arena arena) {
        byte[] ptx;
        try (InputStream in = ReductionKernels.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("resource dev/panamax/cuda/" + RESOURCE + " is missing");
            }
            ptx = in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("reading resource dev/panamax/cuda/" + RESOURCE, e);
        }
        MemorySegment image = arena.allocate(ptx.length + 1L);
        MemorySegment.copy(ptx, 0, image, ValueLayout.JAVA_BYTE, 0, ptx.length);
        image.set(ValueLayout.JAVA_BYTE, ptx.length, (byte) 0);
        return image;
    }

    /** The context it is loaded into. */
    public CudaContext context() {
        return context;
    }

    /** Whether neither it nor its context has been closed. */
    public boolean isOpen() {
        return !closed.get();
    }

    /**
     * Queues {@code inout[i] = op(inout[i], in[i])} for {@code i < count} on {@code stream}
     * ({@code cuLaunchKernel} of {@code panamax_reduce_<op>_<type>}). AVG reduces as SUM (as
     * {@link ReduceOp#accumulating()}): finish an average with {@link #divide}. {@code in} may be
     * {@code inout} itself. A count of 0 checks the arguments and launches nothing.
     *
     * @throws IllegalArgumentException when {@code count < 0}, an operand is smaller than {@code count} elements,
     *                                  an address is not a multiple of the element size, {@code in} and
     *                                  {@code inout} overlap without being the same range, or an operand or the
     *                                  stream belongs to another context
     * @throws IllegalStateException    when this, an operand or the stream is closed
     * @throws CudaException            when the launch fails
     */
    public void reduce(ReduceOp op, DataType type, DeviceMemory inout, DeviceMemory in, long count, CudaStream stream) {
        Objects.requireNonNull(op, "op");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(inout, "inout");
        Objects.requireNonNull(in, "in");
        Objects.requireNonNull(stream, "stream");
        ReduceOp pairwise = op.accumulating();
        long bytes = byteCount(type, count);
        requireOpen();
        requireOperand("inout", inout, type, count, bytes);
        requireOperand("in", in, type, count, bytes);
        if (in.address() != inout.address() && in.address() < inout.address() + bytes
                && inout.address() < in.address() + bytes) {
            throw new IllegalArgumentException("in and inout must be disjoint or the same range: " + count
                    + " elements of " + type.canonicalName() + " at " + hex(in.address()) + " and "
                    + hex(inout.address()) + " overlap");
        }
        requireStream(stream);
        if (count == 0) {
            return;
        }
        int index = reduceIndex(pairwise, type);
        int grid = gridSize(count, type.byteSize(), multiprocessorCount, l2CacheBytes);
        context.setCurrent();
        int rc;
        // A confined arena per launch: the driver copies the parameters during cuLaunchKernel, so they are
        // freed on return; unlike a shared preallocated block, it needs no lock between threads, and one
        // malloc/free costs far less than the launch itself.
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment values = arena.allocate(ValueLayout.JAVA_LONG, 3);
            values.setAtIndex(ValueLayout.JAVA_LONG, 0, inout.address());
            values.setAtIndex(ValueLayout.JAVA_LONG, 1, in.address());
            values.setAtIndex(ValueLayout.JAVA_LONG, 2, count);
            MemorySegment params = arena.allocate(ValueLayout.ADDRESS, 3);
            for (int i = 0; i < 3; i++) {
                params.setAtIndex(ValueLayout.ADDRESS, i, values.asSlice(8L * i, 8));
            }
            rc = cuda_h.cuLaunchKernel(reduceFunctions[index], grid, 1, 1, BLOCK_THREADS, 1, 1, 0,
                    stream.rawHandle(), params, MemorySegment.NULL);
        }
        if (rc != 0) {
            throw CudaCalls.error(launchCall(reduceKernelName(pairwise, type), grid, count, stream), rc);
        }
    }

    /**
     * Queues {@code inout[i] = inout[i] / divisor} for {@code i < count} on {@code stream}
     * ({@code cuLaunchKernel} of {@code panamax_divide_<type>}): the end of an AVG, as
     * {@link dev.panamax.memory.Reductions#divide}. A count of 0 or a divisor of 1 checks the arguments and
     * launches nothing.
     *
     * @throws IllegalArgumentException when {@code divisor < 1}, {@code count < 0}, {@code inout} is smaller than
     *                                  {@code count} elements or not element-aligned, or {@code inout} or the
     *                                  stream belongs to another context
     * @throws IllegalStateException    when this, {@code inout} or the stream is closed
     * @throws CudaException            when the launch fails
     */
    public void divide(DataType type, DeviceMemory inout, long count, int divisor, CudaStream stream) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(inout, "inout");
        Objects.requireNonNull(stream, "stream");
        if (divisor < 1) {
            throw new IllegalArgumentException("divisor must be >= 1: " + divisor);
        }
        long bytes = byteCount(type, count);
        requireOpen();
        requireOperand("inout", inout, type, count, bytes);
        requireStream(stream);
        if (count == 0 || divisor == 1) {
            return;
        }
        int grid = gridSize(count, type.byteSize(), multiprocessorCount, l2CacheBytes);
        context.setCurrent();
        int rc;
        try (Arena arena = Arena.ofConfined()) { // see reduce
            MemorySegment values = arena.allocate(ValueLayout.JAVA_LONG, 3);
            values.setAtIndex(ValueLayout.JAVA_LONG, 0, inout.address());
            values.setAtIndex(ValueLayout.JAVA_LONG, 1, count);
            values.set(ValueLayout.JAVA_INT, 16, divisor);
            MemorySegment params = arena.allocate(ValueLayout.ADDRESS, 3);
            for (int i = 0; i < 3; i++) {
                params.setAtIndex(ValueLayout.ADDRESS, i, values.asSlice(8L * i, 8));
            }
            rc = cuda_h.cuLaunchKernel(divideFunctions[type.ordinal()], grid, 1, 1, BLOCK_THREADS, 1, 1, 0,
                    stream.rawHandle(), params, MemorySegment.NULL);
        }
        if (rc != 0) {
            throw CudaCalls.error(launchCall(divideKernelName(type), grid, count, stream), rc);
        }
    }

    /**
     * Unloads the module ({@code cuModuleUnload}) once, after waiting for the context's work (queued launches
     * run code of the module). Does nothing when already closed.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        context.forget(this);
        Closer closer = new Closer();
        closer.run(() -> {
            context.setCurrent();
            CudaCalls.check(cuda_h.cuCtxSynchronize(), "cuCtxSynchronize(" + context + ")");
        });
        closer.run(() -> CudaCalls.check(cuda_h.cuModuleUnload(module), "cuModuleUnload(" + this + ")"));
        closer.rethrow();
    }

    /**
     * Blocks in the grid, at least one: one 16-byte pack per thread. While two operands of {@code count} elements
     * fit in the L2 cache, at most a full GPU (8 blocks of 256 threads per multiprocessor), whose threads loop
     * over the rest; beyond, a thread per pack (up to the grid's limit), as an element-wise kernel of PyTorch does.
     * Measured on an H200 (60 MB of L2): the full-GPU grid was 15% faster at 16 MiB operands, a thread per pack
     * 5-7% faster from 256 MiB on, where it matched PyTorch's {@code add_} (docs/design/gpu-kernels.md).
     */
    static int gridSize(long count, int elementBytes, int multiprocessorCount, long l2CacheBytes) {
        long perBlock = (long) BLOCK_THREADS * PACK_BYTES / elementBytes;
        long blocks = count / perBlock + (count % perBlock == 0 ? 0 : 1);
        boolean inL2 = count <= l2CacheBytes / 2 / elementBytes;
        long cap = inL2 ? (long) BLOCKS_PER_MULTIPROCESSOR * multiprocessorCount : Integer.MAX_VALUE;
        return (int) Math.max(1, Math.min(blocks, cap));
    }

    /** {@code panamax_reduce_<op>_<type>}; AVG is SUM. */
    static String reduceKernelName(ReduceOp op, DataType type) {
        return "panamax_reduce_" + op.accumulating().name().toLowerCase(Locale.ROOT) + "_" + suffix(type);
    }

    /** {@code panamax_divide_<type>}. */
    static String divideKernelName(DataType type) {
        return "panamax_divide_" + suffix(type);
    }

    private static String suffix(DataType type) {
        return switch (type) {
            case FLOAT32 -> "f32";
            case FLOAT64 -> "f64";
            case FLOAT16 -> "f16";
            case BFLOAT16 -> "bf16";
            case INT32 -> "i32";
            case INT64 -> "i64";
            case INT8 -> "i8";
            case UINT8 -> "u8";
        };
    }

    private static int reduceIndex(ReduceOp pairwise, DataType type) {
        return pairwise.ordinal() * TYPES.length + type.ordinal();
    }

    private static long byteCount(DataType type, long count) {
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0: " + count);
        }
        try {
            return Math.multiplyExact(count, (long) type.byteSize());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("count too large: " + count + " elements of " + type.canonicalName());
        }
    }

    private void requireOperand(String name, DeviceMemory m, DataType type, long count, long bytes) {
        if (m.context() != context) {
            throw new IllegalArgumentException(name + " belongs to " + m.context() + ", the kernels to " + context
                    + ": " + m);
        }
        if (!m.isOpen()) {
            throw new IllegalStateException(name + " is closed: " + m);
        }
        if (m.byteSize() < bytes) {
            throw new IllegalArgumentException(name + " has " + m.byteSize() + " bytes, " + count + " elements of "
                    + type.canonicalName() + " need " + bytes + ": " + m);
        }
        if (m.address() % type.byteSize() != 0) {
            throw new IllegalArgumentException(name + " address " + hex(m.address()) + " is not a multiple of "
                    + type.byteSize() + " (the size of " + type.canonicalName() + "): " + m);
        }
    }

    private void requireStream(CudaStream stream) {
        if (stream.context() != context) {
            throw new IllegalArgumentException("the stream belongs to " + stream.context() + ", the kernels to "
                    + context + ": " + stream);
        }
        stream.requireOpen();
    }

    private void requireOpen() {
        if (closed.get()) {
            throw new IllegalStateException(this + " is closed");
        }
        context.requireOpen();
    }

    private static String launchCall(String kernel, int grid, long count, CudaStream stream) {
        return "cuLaunchKernel(" + kernel + ", grid " + grid + " x " + BLOCK_THREADS + " threads, count " + count
                + ", " + stream + ")";
    }

    /** {@code reduction kernels (reduce.ptx) in primary context of device 0}. */
    @Override
    public String toString() {
        return "reduction kernels (" + RESOURCE + ") in " + context;
    }
}
