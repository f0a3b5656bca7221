package dev.panamax.collectives.gpu;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.GpuBackend;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.internal.device.DeviceBlueConnect;
import dev.panamax.cuda.CudaContext;
import dev.panamax.cuda.DeviceMemory;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * BlueConnect all-reduce, from [BlueConnect], on CUDA device memory: one reduce-scatter per level of a
 * {@link Topology} from the innermost outwards, each over the ranks that differ from this one only
 * at that level and on the part the earlier levels left to it, then the all-gathers back
 * (docs/guide/gpu-stages.md). Each level runs its collectives through its own {@link GpuBackend}: by
 * default NCCL on the innermost level (inside a node) and the own device stages on the others, as
 * [BlueConnect]'s section 4 puts NCCL inside a node.
 *
 * <pre>{@code
 * try (GpuBlueConnect bc = GpuBlueConnect.create(host, ctx, Topology.parse("4x2"),
 *         List.of(GpuBackend.NCCL, GpuBackend.STAGES))) {
 *     bc.allReduce(buffer, count, DataType.FLOAT32, ReduceOp.SUM);
 * }
 * }</pre>
 *
 * <p>Each level's groups get a communicator of their own, split from {@code host}; an NCCL level
 * one NCCL communicator per group, whose unique id the group's first rank makes and sends over
 * that split. So the constraints are per level: an NCCL level needs its group's ranks on distinct
 * devices, an own-stages level its group's ranks on one host. Levels of fan-out 1 run nothing.
 * Calls block until this rank's part is done; every wait is bounded by {@code host}'s timeout;
 * errors name this rank, the level and its group; a failed call leaves the object unusable.
 */
public final class GpuBlueConnect implements AutoCloseable {
    private final DeviceBlueConnect<DeviceMemory> impl;
    private final List<GpuBackend> backends;

    private GpuBlueConnect(DeviceBlueConnect<DeviceMemory> impl, List<GpuBackend> backends) {
        this.impl = impl;
        this.backends = backends;
    }

    /** Over {@code host.topology()} with {@link #defaultBackends}; collective over {@code host}. */
    public static GpuBlueConnect create(Communicator host, CudaContext context) {
        Topology t = host.topology();
        return create(host, context, t, defaultBackends(t));
    }

    /**
     * Over {@code topology} (its rank count that of {@code host}), {@code levelBackends} giving each of
     * its levels, innermost first, the backend of that level's collectives. Collective over {@code host}:
     * every rank passes the same topology and backends and its own context.
     *
     * @throws IllegalArgumentException when the topology's size or the number of backends does not fit
     */
    public static GpuBlueConnect create(Communicator host, CudaContext context, Topology topology,
            List<GpuBackend> levelBackends) {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(context, "context");
        Objects.requireNonNull(topology, "topology");
        List<GpuBackend> backends = List.copyOf(levelBackends);
        return new GpuBlueConnect(DeviceBlueConnect.cuda(host, context, topology, backends, false), backends);
    }

    /** NCCL on level 0 (inside a node), the own stages on every other level. */
    public static List<GpuBackend> defaultBackends(Topology topology) {
        List<GpuBackend> l = new ArrayList<>();
        for (int i = 0; i < topology.levels(); i++) {
            l.add(i == 0 ? GpuBackend.NCCL : GpuBackend.STAGES);
        }
        return List.copyOf(l);
    }

    public int rank() {
        return impl.rank();
    }

    public int size() {
        return impl.size();
    }

    public Topology topology() {
        return impl.topology();
    }

    /** The backend of each level, innermost first. */
    public List<GpuBackend> levelBackends() {
        return backends;
    }

    /** recv[i] = op over all ranks of send[i], i &lt; count; send and recv may be the same memory. */
    public void allReduce(DeviceMemory send, DeviceMemory recv, long count, DataType type, ReduceOp op) {
        impl.allReduce(send, recv, count, type, op);
    }

    /** In-place all-reduce of the first {@code count} elements of {@code buffer}. */
    public void allReduce(DeviceMemory buffer, long count, DataType type, ReduceOp op) {
        impl.allReduce(buffer, buffer, count, type, op);
    }

    /** {@code blueconnect(4x2: nccl, stages rhd)}: the levels that run, innermost first. */
    @Override
    public String toString() {
        return impl.describe();
    }

    /**
     * Collective: closes each level (the own stages wait for their group first, NCCL communicators
     * are destroyed once), the sub-communicators and the working buffers. Once; the host
     * communicator and the context stay the caller's.
     */
    @Override
    public void close() {
        impl.close();
    }
}
