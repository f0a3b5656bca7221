package dev.panamax.collectives.gpu;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.GpuBackend;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.internal.device.DeviceBackend;
import dev.panamax.collectives.internal.device.NcclBackend;
import dev.panamax.collectives.internal.device.StagesBackend;
import dev.panamax.cuda.CudaContext;
import dev.panamax.cuda.DeviceMemory;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.util.Objects;

/**
 * Collectives on CUDA device memory, run by one of two backends ({@link GpuBackend}):
 *
 * <ul>
 * <li>{@link GpuBackend#STAGES} (the default): the same schedules as the host path
 *     (docs/guide/gpu-stages.md): a sender writes straight into the receiver's device memory, mapped
 *     through CUDA IPC, with {@code cuMemcpyDtoDAsync}; the receiver reduces with the GPU kernels;
 *     the host communicator's shared memory carries who may write where and when it is written.
 *     Every rank of {@code host} must be on this host.</li>
 * <li>{@link GpuBackend#NCCL}: each collective is one NCCL call on a stream of this communicator,
 *     then awaited (docs/reference/nccl.md). One device per rank.</li>
 * </ul>
 *
 * <p>Every rank calls the same collectives in the same order. Calls are blocking: they return when
 * this rank's part is finished on the device. Counts are in elements. Every wait is bounded by the
 * host communicator's timeout; a failure names the rank, a peer that fails, closes or dies turns
 * into a {@link PeerFailedException} (own stages) or a {@link CollectiveException}, a silent one
 * into a {@link CollectiveTimeoutException}, and the communicator is unusable afterwards.
 *
 * <p>Own stages: peers keep the allocations of the buffers passed here mapped (each is exported
 * once, by whole allocation, so views work): keep them allocated until {@link #close()}.
 */
public final class GpuCommunicator implements AutoCloseable {
    private final DeviceBackend<DeviceMemory> engine;
    private final GpuBackend backend;
    private String algorithm;

    private GpuCommunicator(DeviceBackend<DeviceMemory> engine, GpuBackend backend) {
        this.engine = engine;
        this.backend = backend;
        this.algorithm = backend == GpuBackend.NCCL ? "nccl" : Algorithms.RING;
    }

    /** Own stages over {@code host}: every rank calls it with its own context (one device or several). */
    public static GpuCommunicator create(Communicator host, CudaContext context) {
        return create(host, context, GpuBackend.STAGES);
    }

    /**
     * A communicator over {@code host} with the given backend; collective over {@code host}, every
     * rank with its own context and the same backend. For {@link GpuBackend#NCCL}, rank 0 makes the
     * unique id and broadcasts it over {@code host}, and each rank creates its NCCL communicator with
     * {@code host}'s timeout.
     *
     * @throws IllegalStateException on every rank when some rank cannot load libnccl.so.2 (NCCL), naming it
     * @throws IllegalArgumentException when a rank is not on this host (own stages)
     */
    public static GpuCommunicator create(Communicator host, CudaContext context, GpuBackend backend) {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(context, "context");
        Objects.requireNonNull(backend, "backend");
        return new GpuCommunicator(switch (backend) {
            case STAGES -> StagesBackend.cuda(host, context);
            case NCCL -> NcclBackend.create(host, context);
        }, backend);
    }

    public int rank() {
        return engine.rank();
    }

    public int size() {
        return engine.size();
    }

    /** The backend chosen at creation. */
    public GpuBackend backend() {
        return backend;
    }

    /**
     * Own stages: {@code ring} (the default) or {@code rhd}, the same on every rank. The NCCL backend
     * takes only {@code nccl}: NCCL chooses its algorithms itself ({@code NCCL_ALGO}).
     */
    public void setAlgorithm(String name) {
        boolean ok = backend == GpuBackend.NCCL ? name.equals("nccl") : name.equals(Algorithms.RING)
                || name.equals(Algorithms.HALVING_DOUBLING);
        if (!ok) {
            throw new IllegalArgumentException(backend == GpuBackend.NCCL
                    ? "the NCCL backend chooses its own algorithms; setAlgorithm takes only 'nccl', not '" + name + "'"
                    : "GPU stages run 'ring' or 'rhd', not '" + name + "'");
        }
        this.algorithm = name;
    }

    /** {@code ring} or {@code rhd} (own stages), {@code nccl} (NCCL). */
    public String algorithm() {
        return algorithm;
    }

    /** recv[i] = op over all ranks of send[i], i &lt; count; send and recv may be the same memory. */
    public void allReduce(DeviceMemory send, DeviceMemory recv, long count, DataType type, ReduceOp op) {
        engine.run(Collective.ALL_REDUCE, algorithm, send, recv, count, type, op, 0);
    }

    /** In-place all-reduce of the first {@code count} elements of {@code buffer}. */
    public void allReduce(DeviceMemory buffer, long count, DataType type, ReduceOp op) {
        allReduce(buffer, buffer, count, type, op);
    }

    /** NCCL semantics: {@code send} holds {@code size * recvCount} elements, rank r gets the reduction of block r. */
    public void reduceScatter(DeviceMemory send, DeviceMemory recv, long recvCount, DataType type, ReduceOp op) {
        engine.run(Collective.REDUCE_SCATTER, algorithm, send, recv, recvCount, type, op, 0);
    }

    /** NCCL semantics: {@code recv} holds {@code size * sendCount} elements, block r from rank r. */
    public void allGather(DeviceMemory send, DeviceMemory recv, long sendCount, DataType type) {
        engine.run(Collective.ALL_GATHER, algorithm, send, recv, sendCount, type, ReduceOp.SUM, 0);
    }

    /** Copies root's {@code send} into every rank's {@code recv} (own stages: a pipelined ring chain). */
    public void broadcast(DeviceMemory send, DeviceMemory recv, long count, DataType type, int root) {
        engine.run(Collective.BROADCAST, backend == GpuBackend.NCCL ? "nccl" : Algorithms.RING, send, recv, count, type,
                ReduceOp.SUM, root);
    }

    /**
     * Collective for the own stages: waits for every rank (over the host communicator), unmaps the
     * peers' memory and frees this rank's staging. NCCL: destroys the NCCL communicator (aborts it
     * after a failure) and its stream. Once; the host communicator and the context stay the caller's.
     */
    @Override
    public void close() {
        engine.close();
    }
}
