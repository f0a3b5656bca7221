package dev.panamax.collectives;

import dev.panamax.collectives.internal.GpuStages;
import dev.panamax.cuda.CudaContext;
import dev.panamax.cuda.DeviceMemory;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.util.Objects;

/**
 * Collectives on CUDA device memory of ranks on one host, run by the same schedules as the host
 * path (docs/gpu-stages.md): a sender writes straight into the receiver's device memory, mapped
 * through CUDA IPC, with {@code cuMemcpyDtoDAsync}; the receiver reduces with the GPU kernels; the
 * host communicator's shared memory carries who may write where and when it is written.
 *
 * <p>Every rank of {@code host} must be on this host and call the same collectives in the same
 * order. Calls are blocking: they return when this rank's part is finished on the device. Counts
 * are in elements. Every wait is bounded by the host communicator's timeout; a peer that fails,
 * closes or dies turns into a {@link PeerFailedException} naming it, a silent one into a
 * {@link CollectiveTimeoutException} naming it, and the communicator is unusable afterwards.
 *
 * <p>Peers keep the allocations of the buffers passed here mapped (each is exported once, by whole
 * allocation, so views work): keep them allocated until {@link #close()}.
 */
public final class GpuCommunicator implements AutoCloseable {
    private final GpuStages<DeviceMemory> stages;
    private String algorithm = "ring";

    private GpuCommunicator(GpuStages<DeviceMemory> stages) {
        this.stages = stages;
    }

    /** Collective over {@code host}: every rank calls it with its own context (one device or several). */
    public static GpuCommunicator create(Communicator host, CudaContext context) {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(context, "context");
        return new GpuCommunicator(GpuStages.cuda(host, context));
    }

    public int rank() {
        return stages.rank();
    }

    public int size() {
        return stages.size();
    }

    /** {@code ring} (the default) or {@code rhd}; the same on every rank. */
    public void setAlgorithm(String name) {
        if (!name.equals("ring") && !name.equals("rhd")) {
            throw new IllegalArgumentException("GPU stages run 'ring' or 'rhd', not '" + name + "'");
        }
        this.algorithm = name;
    }

    public String algorithm() {
        return algorithm;
    }

    /** recv[i] = op over all ranks of send[i], i &lt; count; send and recv may be the same memory. */
    public void allReduce(DeviceMemory send, DeviceMemory recv, long count, DataType type, ReduceOp op) {
        stages.run(Collective.ALL_REDUCE, algorithm, send, recv, count, type, op, 0);
    }

    /** In-place all-reduce of the first {@code count} elements of {@code buffer}. */
    public void allReduce(DeviceMemory buffer, long count, DataType type, ReduceOp op) {
        allReduce(buffer, buffer, count, type, op);
    }

    /** NCCL semantics: {@code send} holds {@code size * recvCount} elements, rank r gets the reduction of block r. */
    public void reduceScatter(DeviceMemory send, DeviceMemory recv, long recvCount, DataType type, ReduceOp op) {
        stages.run(Collective.REDUCE_SCATTER, algorithm, send, recv, recvCount, type, op, 0);
    }

    /** NCCL semantics: {@code recv} holds {@code size * sendCount} elements, block r from rank r. */
    public void allGather(DeviceMemory send, DeviceMemory recv, long sendCount, DataType type) {
        stages.run(Collective.ALL_GATHER, algorithm, send, recv, sendCount, type, ReduceOp.SUM, 0);
    }

    /** Copies root's {@code send} into every rank's {@code recv} (ring: a pipelined chain). */
    public void broadcast(DeviceMemory send, DeviceMemory recv, long count, DataType type, int root) {
        stages.run(Collective.BROADCAST, "ring", send, recv, count, type, ReduceOp.SUM, root);
    }

    /**
     * Collective: waits for every rank (over the host communicator), unmaps the peers' memory and
     * frees this rank's staging. The host communicator and the context stay the caller's.
     */
    @Override
    public void close() {
        stages.close();
    }
}
