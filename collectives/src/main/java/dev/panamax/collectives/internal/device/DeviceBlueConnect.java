package dev.panamax.collectives.internal.device;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.GpuBackend;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.algorithms.Costs;
import dev.panamax.cuda.CudaContext;
import dev.panamax.cuda.DeviceMemory;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.StringJoiner;
import java.util.Collections;

/**
 * BlueConnect, from [BlueConnect], on device memory, one engine per level: the all-reduce is decomposed
 * along the {@link Topology} as the host algorithm does (a reduce-scatter per level from the
 * innermost outwards, each on the part the earlier ones left to this rank, then the all-gathers
 * back), but each level's reduce-scatter and all-gather are whole collectives of a
 * {@link DeviceBackend} over the level's group c(r, w_i): NCCL or the own device stages, chosen
 * per level ([BlueConnect] section 4: NCCL inside a node, own stages across).
 *
 * <p>Each group runs over a sub-communicator {@code host.split(color = the group's first rank, key =
 * the coordinate at the level)}, so the engine's ranks are the coordinates. Whole collectives take
 * NCCL's equal blocks, so the vector is padded to a multiple of the rank count: when {@code count}
 * is not one, it is copied into a padded working buffer first and the result copied out at the end
 * (the padding's values are reduced with the rest and dropped). AVG reduces as SUM at every level
 * and divides once, after the last reduce-scatter, as the host schedules do (integer averages stay
 * truncated once). Each level's call is awaited before the next, so the engines' streams need no
 * ordering among themselves.
 *
 * <p>Levels of fan-out 1 are left out, as on the host, unless {@code includeUnitLevels} (then each
 * is a collective of groups of one rank, which lets a one-GPU machine run NCCL levels).
 *
 * @param <B> the device buffer type
 */
public final class DeviceBlueConnect<B> implements AutoCloseable {
    /** Makes the engine of one level's group, over the group's sub-communicator. */
    @FunctionalInterface
    interface EngineFactory<B> {
        DeviceBackend<B> create(Communicator group, int level, GpuBackend backend);
    }

    /** One level this rank takes part in. */
    private record Level<B>(int level, int[] group, int coordinate, GpuBackend backend, String algorithm,
                            DeviceBackend<B> engine) {
    }

    private final int rank;
    private final int size;
    private final long timeoutNanos;
    private final Topology topology;
    private final List<Level<B>> levels;
    private final List<Communicator> groups;
    private final DeviceOps<B> ops;
    private final AutoCloseable kernels;
    /** The working buffer (padded vector and each level's part); grown by doubling, never shrunk. */
    private B work;
    /** Replaced working buffers stay allocated until close: peers of the own stages may have them mapped. */
    private final List<B> retired = new ArrayList<>();
    private String failure;
    private boolean closed;

    private DeviceBlueConnect(Communicator host, Topology topology, List<Level<B>> levels, List<Communicator> groups,
                              DeviceOps<B> ops, AutoCloseable kernels) {
        this.rank = host.rank();
        this.size = host.size();
        this.timeoutNanos = host.timeoutNanos();
        this.topology = topology;
        this.levels = levels;
        this.groups = groups;
        this.ops = ops;
        this.kernels = kernels;
    }

    /**
     * BlueConnect on CUDA device memory over {@code host}, {@code backends} giving each level of
     * {@code topology} (innermost first) its engine. Collective over {@code host}.
     */
    public static DeviceBlueConnect<DeviceMemory> cuda(Communicator host, CudaContext context, Topology topology,
                                                       List<GpuBackend> backends, boolean includeUnitLevels) {
        CudaDeviceOps.Kernels kernels = CudaKernels.load(context);
        CudaDeviceOps ops = null;
        try {
            ops = new CudaDeviceOps(context, kernels);
            return build(host, topology, backends, includeUnitLevels, ops, kernels, (group, level, backend) ->
                    switch (backend) {
                case NCCL -> NcclBackend.create(group, context);
                case STAGES -> StagesBackend.cuda(group, context, kernels, false);
            });
        } catch (RuntimeException | Error e) {
            if (ops != null) {
                ops.close();
            }
            kernels.close();
            throw e;
        }
    }

    /** BlueConnect with own stages on every level over host-memory "devices" of in-JVM ranks (tests). */
    static DeviceBlueConnect<MemorySegment> hostMemory(Communicator host, Topology topology,
            EmulatedDeviceOps.Fabric fabric,
                                                       boolean includeUnitLevels) {
        EmulatedDeviceOps ops = new EmulatedDeviceOps(fabric, host.rank());
        try {
            List<GpuBackend> stages = Collections.nCopies(topology.levels(), GpuBackend.STAGES);
            return build(host, topology, stages, includeUnitLevels, ops, null,
                    (group, level, backend) -> StagesBackend.hostMemory(group, fabric));
        } catch (RuntimeException | Error e) {
            ops.close();
            throw e;
        }
    }

    /**
     * Checks the arguments (the same on every rank, so every rank fails alike before anything
     * collective), then splits {@code host} into the groups of each level and makes their engines.
     * On failure closes what it made; {@code ops} and {@code kernels} stay the caller's then.
     */
    static <B> DeviceBlueConnect<B> build(Communicator host, Topology topology, List<GpuBackend> backends,
            boolean includeUnitLevels,
                                          DeviceOps<B> ops, AutoCloseable kernels, EngineFactory<B> factory) {
        check(host, topology, backends);
        List<Level<B>> levels = new ArrayList<>();
        List<Communicator> groups = new ArrayList<>();
        int r = host.rank();
        try {
            for (int i = 0; i < topology.levels(); i++) {
                int fanout = topology.fanout(i);
                if (fanout == 1 && !includeUnitLevels) {
                    continue;
                }
                int[] group = topology.group(r, i);
                int coordinate = topology.coordinate(r, i);
                Communicator g = host.split(group[0], coordinate);
                groups.add(g);
                if (g.rank() != coordinate || g.size() != fanout) {
                    throw new IllegalStateException("rank " + r + ": the level " + i + " group "
                            + Arrays.toString(group)
                            + " split as rank " + g.rank() + " of " + g.size());
                }
                GpuBackend backend = backends.get(i);
                // as the host BlueConnect: halving/doubling for a power of two, else the ring
                String algorithm = backend == GpuBackend.NCCL ? "nccl" : Costs.isPowerOfTwo(fanout)
                        ? Algorithms.HALVING_DOUBLING : Algorithms.RING;
                levels.add(new Level<>(i, group, coordinate, backend, algorithm, factory.create(g, i, backend)));
            }
        } catch (RuntimeException | Error e) {
            closeAll(levels, groups, e);
            throw e;
        }
        return new DeviceBlueConnect<>(host, topology, levels, groups, ops, kernels);
    }

    static void check(Communicator host, Topology topology, List<GpuBackend> backends) {
        if (topology.size() != host.size()) {
            throw new IllegalArgumentException("topology " + topology + " has " + topology.size()
                    + " ranks, the communicator "
                    + host.size());
        }
        if (backends.size() != topology.levels()) {
            throw new IllegalArgumentException(backends.size() + " level backends " + backends + " for the "
                    + topology.levels()
                    + " levels of " + topology);
        }
        for (GpuBackend b : backends) {
            if (b == null) {
                throw new NullPointerException("level backend");
            }
        }
    }

    public int rank() {
        return rank;
    }

    public int size() {
        return size;
    }

    public Topology topology() {
        return topology;
    }

    /** {@code blueconnect(3x2: nccl, stages rhd)}: the levels that run, innermost first. */
    public String describe() {
        StringJoiner f = new StringJoiner("x");
        StringJoiner k = new StringJoiner(", ");
        for (Level<B> l : levels) {
            f.add(Integer.toString(l.group().length));
            k.add(l.backend() == GpuBackend.NCCL ? "nccl" : "stages " + l.algorithm());
        }
        return "blueconnect(" + (levels.isEmpty() ? "1" : f) + ": " + (levels.isEmpty() ? "copy" : k) + ")";
    }

    /**
     * {@code recv[i] = op over all ranks of send[i]}, {@code i < count}; {@code send} and {@code recv}
     * may be the same memory. Returns when this rank's part is done on the device.
     */
    public void allReduce(B send, B recv, long count, DataType type, ReduceOp op) {
        if (closed) {
            throw new IllegalStateException("BlueConnect of rank " + rank + " is closed");
        }
        if (failure != null) {
            throw new IllegalStateException("rank " + rank + ": an earlier BlueConnect all-reduce failed (" + failure
                    + "); unusable");
        }
        if (count < 0) {
            throw new IllegalArgumentException("count " + count + " < 0");
        }
        int e = type.byteSize();
        requireSize(send, count * e, "send");
        requireSize(recv, count * e, "receive");
        if (count == 0) {
            return;
        }
        try {
            run(send, recv, count, type, op, e);
        } catch (RuntimeException | Error x) {
            failure = String.valueOf(x.getMessage());
            throw x;
        }
    }

    private void run(B send, B recv, long count, DataType type, ReduceOp op, int e) {
        int k = levels.size();
        long padded = Math.ceilDiv(count, size) * size;
        boolean pad = padded != count;
        // len[j]: elements at level j's input; level j leaves len[j] / p_j to this rank
        long[] len = new long[k + 1];
        len[0] = padded;
        // offsets in the working buffer: the padded vector (if any), then each level's part, 256-byte aligned
        long[] offset = new long[k + 1];
        long at = pad ? align(padded * e) : 0;
        for (int j = 0; j < k; j++) {
            len[j + 1] = len[j] / levels.get(j).group().length;
            offset[j + 1] = at;
            at = align(at + len[j + 1] * e);
        }
        B w = work(at);
        // in[j]: level j's input (in[0]: the whole vector), in[j + 1] what level j leaves to this rank
        B whole = pad ? ops.slice(w, 0, padded * e) : null;
        if (pad) {
            ops.copy(send, 0, whole, 0, count * e);
            ops.await(timeoutNanos);
        }
        List<B> in = new ArrayList<>();
        in.add(pad ? whole : ops.slice(send, 0, count * e));
        for (int j = 1; j <= k; j++) {
            in.add(ops.slice(w, offset[j], len[j] * e));
        }
        ReduceOp levelOp = op == ReduceOp.AVG ? ReduceOp.SUM : op;
        for (int j = 0; j < k; j++) {
            level(levels.get(j), Collective.REDUCE_SCATTER, in.get(j), in.get(j + 1), len[j + 1], type, levelOp);
        }
        if (k == 0) {
            // no level: this rank alone holds the result
            if (!sameMemory(send, recv)) {
                ops.copy(send, 0, recv, 0, count * e);
            }
        } else if (op == ReduceOp.AVG) {
            ops.divide(type, in.get(k), 0, len[k], size);
        }
        ops.await(timeoutNanos);
        // ... and the all-gathers back out; the outermost one writes the result (or the padded vector)
        List<B> out = new ArrayList<>(in);
        out.set(0, pad ? whole : ops.slice(recv, 0, count * e));
        for (int j = k - 1; j >= 0; j--) {
            level(levels.get(j), Collective.ALL_GATHER, out.get(j + 1), out.get(j), len[j + 1], type, ReduceOp.SUM);
        }
        if (pad && k > 0) {
            ops.copy(whole, 0, recv, 0, count * e);
            ops.await(timeoutNanos);
        }
    }

    private static long align(long bytes) {
        return (bytes + 255) & ~255L;
    }

    private boolean sameMemory(B a, B b) {
        return ops.allocationOf(a) == ops.allocationOf(b) && ops.offsetInAllocation(a) == ops.offsetInAllocation(b);
    }

    /** Runs one level's collective; its errors name this rank, the level and (for a failed peer) the peer's rank here.
     * */
    private void level(Level<B> l, Collective c, B send, B recv, long count, DataType type, ReduceOp op) {
        try {
            l.engine().run(c, l.algorithm(), send, recv, count, type, op, 0);
        } catch (RuntimeException x) {
            String m = "rank " + rank + ": level " + l.level() + " " + c.label() + " ("
                    + (l.backend() == GpuBackend.NCCL ? "nccl" : "stages "
                    + l.algorithm()) + " over ranks " + Arrays.toString(l.group()) + "): " + x.getMessage();
            throw switch (x) {
                case PeerFailedException p when p.peer() >= 0 && p.peer() < l.group().length ->
                        new PeerFailedException(l.group()[p.peer()], m, p);
                case CollectiveTimeoutException t -> new CollectiveTimeoutException(m, t);
                case CollectiveException ce -> new CollectiveException(m, ce);
                default -> new CollectiveException(m, x);
            };
        }
    }

    private B work(long bytes) {
        if (bytes == 0) {
            return work;
        }
        if (work == null || ops.byteSize(work) < bytes) {
            long old = work == null ? 0 : ops.byteSize(work);
            if (work != null) {
                retired.add(work);
            }
            work = null;
            work = ops.allocate(Math.max(bytes, Math.max(4096, old * 2)));
        }
        return work;
    }

    private void requireSize(B buffer, long bytes, String what) {
        if (ops.byteSize(buffer) < bytes) {
            throw new IllegalArgumentException("rank " + rank + ": the " + what + " buffer " + ops.describe(buffer)
                    + " is smaller than the call's " + bytes + " bytes");
        }
    }

    /**
     * Closes the levels' engines (the own stages' close is a barrier of their group, after which no
     * peer writes here), then the sub-communicators, then frees the working buffers. Once.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        Throwable first = closeAll(levels, groups, null);
        try {
            ops.await(timeoutNanos);
        } catch (RuntimeException x) {
            first = first == null ? x : first;
        }
        List<B> mine = new ArrayList<>(retired);
        if (work != null) {
            mine.add(work);
        }
        for (B b : mine) {
            try {
                ops.free(b);
            } catch (RuntimeException x) {
                first = first == null ? x : first;
            }
        }
        retired.clear();
        work = null;
        try {
            ops.close();
        } catch (RuntimeException x) {
            first = first == null ? x : first;
        }
        if (kernels != null) {
            try {
                kernels.close();
            } catch (Exception x) {
                first = first == null ? x : first;
            }
        }
        if (first instanceof RuntimeException re) {
            throw re;
        }
        if (first instanceof Error er) {
            throw er;
        }
        if (first != null) {
            throw new IllegalStateException(first);
        }
    }

    /** Closes the engines (innermost first) and then the groups; the first failure is returned (or added to {@code
     * primary}). */
    private static <B> Throwable closeAll(List<Level<B>> levels, List<Communicator> groups, Throwable primary) {
        Throwable first = null;
        for (Level<B> l : levels) {
            try {
                l.engine().close();
            } catch (RuntimeException x) {
                first = first == null ? x : first;
            }
        }
        for (Communicator g : groups) {
            try {
                g.close();
            } catch (RuntimeException x) {
                first = first == null ? x : first;
            }
        }
        if (primary != null && first != null) {
            primary.addSuppressed(first);
            return null;
        }
        return first;
    }
}
