package dev.panamax.collectives.internal.device;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.algorithms.Algorithm;
import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.cuda.CudaContext;
import dev.panamax.cuda.DeviceMemory;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;

/**
 * The device stages of a group of same-host ranks, behind {@code GpuCommunicator}: the control
 * block set up over the host communicator, the device operations and the executor. Public for the
 * API package only (this package is not exported).
 *
 * @param <B> the device buffer type
 */
public final class StagesBackend<B> implements DeviceBackend<B> {
    private final Communicator host;
    private final DeviceOps<B> ops;
    private final AutoCloseable kernels;
    private final DeviceSignals control;
    private final DeviceScheduleExecutor<B> executor;
    private boolean closed;

    private StagesBackend(Communicator host, DeviceOps<B> ops, AutoCloseable kernels) {
        for (int p = 0; p < host.size(); p++) {
            String t = host.transportTo(p);
            if (!t.equals("self") && !t.equals("shm") && !t.equals("local")) {
                throw new IllegalArgumentException("GPU stages need every rank on this host; rank " + p
                        + " is reached by " + t);
            }
        }
        this.host = host;
        this.ops = ops;
        this.kernels = kernels;
        DeviceSignals cb = DeviceSignals.shared(host);
        this.control = cb;
        this.executor = new DeviceScheduleExecutor<>(ops, cb, host.timeoutNanos());
    }

    /** CUDA device stages on {@code context} for the ranks of {@code host} (collective over {@code host}). */
    public static StagesBackend<DeviceMemory> cuda(Communicator host, CudaContext context) {
        CudaDeviceOps.Kernels kernels = CudaKernels.load(context);
        try {
            return cuda(host, context, kernels, true);
        } catch (RuntimeException | Error e) {
            kernels.close();
            throw e;
        }
    }

    /** As {@link #cuda(Communicator, CudaContext)} with kernels already loaded; closed with the stages when {@code
     * ownsKernels}. */
    static StagesBackend<DeviceMemory> cuda(Communicator host, CudaContext context, CudaDeviceOps.Kernels kernels,
            boolean ownsKernels) {
        CudaDeviceOps ops = new CudaDeviceOps(context, kernels);
        try {
            return new StagesBackend<>(host, ops, ownsKernels ? kernels : null);
        } catch (RuntimeException | Error e) {
            ops.close();
            throw e;
        }
    }

    /** Host-memory device stages for ranks that are threads of one JVM sharing {@code fabric} (tests). */
    static StagesBackend<MemorySegment> hostMemory(Communicator host, EmulatedDeviceOps.Fabric fabric) {
        EmulatedDeviceOps ops = new EmulatedDeviceOps(fabric, host.rank());
        try {
            return new StagesBackend<>(host, ops, null);
        } catch (RuntimeException | Error e) {
            ops.close();
            throw e;
        }
    }

    @Override
    public int rank() {
        return host.rank();
    }

    @Override
    public int size() {
        return host.size();
    }

    /**
     * Runs {@code algorithm}'s schedule of {@code collective} ({@code count} as the host API means
     * it) on {@code send} and {@code recv}; {@code root} for broadcast only.
     */
    @Override
    public void run(Collective collective, String algorithm, B send, B recv, long count, DataType type, ReduceOp op,
            int root) {
        if (closed) {
            throw new IllegalStateException("GPU communicator of rank " + rank() + " is closed");
        }
        Algorithm a = Algorithms.get(algorithm);
        Problem p = new Problem(collective, rank(), size(), count, type.byteSize(), root, Topology.flat(size()));
        String why = a.unsupported(p);
        if (why != null) {
            throw new IllegalArgumentException(why);
        }
        long sendBytes = switch (collective) {
            case REDUCE_SCATTER -> count * size();
            default -> count;
        } * type.byteSize();
        long recvBytes = switch (collective) {
            case ALL_GATHER -> count * size();
            default -> count;
        } * type.byteSize();
        requireSize(send, sendBytes, "send");
        requireSize(recv, recvBytes, "receive");
        executor.run(a.build(p), send, recv, type, op);
    }

    private void requireSize(B buffer, long bytes, String what) {
        if (ops.byteSize(buffer) < bytes) {
            throw new IllegalArgumentException("the " + what + " buffer " + ops.describe(buffer)
                    + " is smaller than the call's "
                    + bytes + " bytes");
        }
    }

    /**
     * Waits for the peers (a host barrier, so that none still writes into this rank), then unmaps
     * their memory and frees this rank's. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException first = null;
        try {
            host.barrier();
        } catch (RuntimeException e) {
            first = e; // a peer is gone: nothing of it writes here any more either
        }
        try {
            executor.close();
        } catch (RuntimeException e) {
            first = first == null ? e : first;
        }
        try {
            ops.close();
        } catch (RuntimeException e) {
            first = first == null ? e : first;
        }
        if (kernels != null) {
            try {
                kernels.close();
            } catch (Exception e) {
                first = first == null ? new IllegalStateException(e) : first;
            }
        }
        control.close();
        if (first != null) {
            throw first;
        }
    }
}
