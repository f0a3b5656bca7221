package dev.panamax.bench.perf;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.GpuBackend;
import dev.panamax.collectives.gpu.GpuCommunicator;
import dev.panamax.cuda.Cuda;
import dev.panamax.cuda.CudaContext;
import dev.panamax.cuda.DeviceMemory;
import dev.panamax.cuda.Nccl;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The measured collective on device memory ({@code -t gpu}: own stages over CUDA IPC; {@code -t nccl}:
 * NCCL), through {@link GpuCommunicator}. The send and receive buffers are {@code cuMemAlloc}
 * allocations of the sweep's largest sizes; inputs are written and results checked through a host
 * buffer (copies that are not timed), with the same known inputs and rules as the host transports.
 *
 * <p>Device of a rank: {@code (PANAMAX_CUDA_DEVICE + local rank) mod device count}
 * ({@code PANAMAX_CUDA_DEVICE} defaults to 0), so ranks on one host spread over its devices and
 * share them when there are fewer devices than ranks. NCCL needs one device per rank: more ranks on
 * a host than devices is refused.
 */
final class DeviceTarget implements PerfRunner.Target {
    private final PerfConfig config;
    private final int ranks;
    private final CudaContext context;
    private final GpuCommunicator gpu;
    private final DeviceMemory send;
    private final DeviceMemory recv;
    private final Arena arena;
    private final MemorySegment staging;
    private String algorithm;

    private DeviceTarget(PerfConfig config, int ranks, CudaContext context, GpuCommunicator gpu, DeviceMemory send,
            DeviceMemory recv,
                         Arena arena, MemorySegment staging) {
        this.config = config;
        this.ranks = ranks;
        this.context = context;
        this.gpu = gpu;
        this.send = send;
        this.recv = recv;
        this.arena = arena;
        this.staging = staging;
    }

    /** The backend of a device transport name ({@code gpu}, {@code nccl}), or null for a host transport. */
    static GpuBackend backend(String transport) {
        return switch (transport) {
            case "gpu" -> GpuBackend.STAGES;
            case "nccl" -> GpuBackend.NCCL;
            default -> null;
        };
    }

    /**
     * Null when the libraries {@code backend} needs load; else a message naming each missing one
     * (libcuda.so.1, and for NCCL libnccl.so.2) with the loader's reason.
     */
    static String missingLibraries(String transport, GpuBackend backend) {
        List<String> missing = new ArrayList<>();
        if (!Cuda.isAvailable()) {
            missing.add(Cuda.unavailabilityCause().getMessage()); // names libcuda.so.1 and its settings
        }
        boolean nccl = backend == GpuBackend.NCCL;
        if (nccl && !Nccl.isAvailable()) {
            missing.add(Nccl.unavailabilityCause().getMessage()); // names libnccl.so.2 and its settings
        }
        if (missing.isEmpty()) {
            return null;
        }
        return "-t " + transport + " needs the CUDA driver" + (nccl ? " and NCCL" : "") + ": "
                + String.join("; ", missing)
                + (nccl && !Nccl.isAvailable()
                ? " (NCCL: e.g. PANAMAX_LIBRARY_NCCL=<site-packages>/nvidia/nccl/lib/libnccl.so.2 of the "
                + "Python package nvidia-nccl-cu13)" : "");
    }

    /** Collective over {@code host}: the context, the communicator and the buffers of this rank. */
    static DeviceTarget open(Communicator host, PerfConfig config, String transport, int localRank) {
        GpuBackend backend = backend(transport);
        String missing = missingLibraries(transport, backend);
        if (missing != null) {
            throw new IllegalStateException("rank " + host.rank() + ": " + missing);
        }
        int devices = Cuda.deviceCount();
        if (devices == 0) {
            throw new IllegalStateException("rank " + host.rank() + ": -t " + transport + " found no CUDA device");
        }
        int base = Integer.parseInt(System.getenv().getOrDefault("PANAMAX_CUDA_DEVICE", "0").trim());
        if (backend == GpuBackend.NCCL) {
            int local = sameHostRanks(host);
            if (local > devices) {
                throw new IllegalStateException("rank " + host.rank()
                        + ": -t nccl needs a CUDA device per rank (NCCL does not put two "
                        + "ranks of a communicator on one device): " + local + " ranks on this host, " + devices
                        + " device(s)");
            }
        }
        int device = Math.floorMod(base + localRank, devices);
        CudaContext ctx = Cuda.device(device).retainPrimaryContext();
        GpuCommunicator gpu = null;
        DeviceMemory send = null;
        DeviceMemory recv = null;
        Arena arena = Arena.ofShared();
        try {
            long[] max = config.maxBufferBytes(host.size());
            int ts = config.type().byteSize();
            send = ctx.allocate(Math.max(max[0], ts));
            recv = ctx.allocate(Math.max(max[1], ts));
            MemorySegment staging = arena.allocate(Math.max(send.byteSize(), recv.byteSize()), 4096);
            gpu = GpuCommunicator.create(host, ctx, backend);
            return new DeviceTarget(config, host.size(), ctx, gpu, send, recv, arena, staging);
        } catch (RuntimeException | Error e) {
            if (gpu != null) {
                gpu.close();
            }
            arena.close();
            ctx.close(); // frees send and recv with it
            throw e;
        }
    }

    /** Ranks of {@code host} on this host, this one included. */
    private static int sameHostRanks(Communicator host) {
        int n = 0;
        for (int p = 0; p < host.size(); p++) {
            String t = host.transportTo(p);
            if (t.equals("self") || t.equals("shm") || t.equals("local")) {
                n++;
            }
        }
        return n;
    }

    /** {@code GPU 0 (NVIDIA H100 80GB HBM3)}, for the header. */
    String deviceName() {
        return "GPU " + context.device().ordinal() + " (" + context.device().name() + ")";
    }

    @Override
    public void select(String algorithm) {
        gpu.setAlgorithm(algorithm);
        this.algorithm = algorithm;
    }

    @Override
    public String schedule(long count) {
        return algorithm;
    }

    @Override
    public Double predictUs(String algorithm, long count) {
        return null; // the cost model describes host transports
    }

    @Override
    public void fill(CheckData check, int rank) {
        int ts = config.type().byteSize();
        MemorySegment s = staging.asSlice(0, send.byteSize());
        check.fill(s, rank, send.byteSize() / ts);
        send.copyFromHost(s);
        recv.fill((byte) 0);
    }

    @Override
    public void run(long count) {
        switch (config.collective()) {
            case ALLREDUCE -> gpu.allReduce(send, recv, count, config.type(), config.op());
            case REDUCESCATTER -> gpu.reduceScatter(send, recv, count, config.type(), config.op());
            case ALLGATHER -> gpu.allGather(send, recv, count, config.type());
            case BROADCAST -> gpu.broadcast(send, recv, count, config.type(), config.root());
            case REDUCE ->
                    throw new UnsupportedOperationException("device memory has no reduce; use -t shm, tcp, verbs or "
                            + "local");
        }
    }

    @Override
    public long check(CheckData check, int rank, long count) {
        long bytes = config.collective().recvBytes(count, config.type().byteSize(), ranks);
        DeviceMemory r = recv.slice(0, bytes);
        r.fill((byte) 0);
        run(count);
        MemorySegment h = staging.asSlice(0, bytes);
        r.copyToHost(h);
        return check.countWrong(h, rank, count);
    }

    /** Collective (the own stages end with a barrier): the communicator, then the buffers and the context. */
    @Override
    public void close() {
        try {
            gpu.close();
        } finally {
            try {
                send.close();
                recv.close();
            } finally {
                arena.close();
                context.close();
            }
        }
    }
}
