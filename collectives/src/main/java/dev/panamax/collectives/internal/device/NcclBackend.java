package dev.panamax.collectives.internal.device;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.Communicator;
import dev.panamax.cuda.CudaContext;
import dev.panamax.cuda.CudaStream;
import dev.panamax.cuda.DeviceMemory;
import dev.panamax.cuda.Nccl;
import dev.panamax.cuda.NcclCommunicator;
import dev.panamax.cuda.NcclException;
import dev.panamax.cuda.NcclUniqueId;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * Whole collectives through NCCL for the ranks of a host communicator, one device per rank: the
 * NCCL backend of {@code GpuCommunicator} and the NCCL engine of a {@link DeviceBlueConnect} level.
 *
 * <p>Set-up, collective over {@code host}: every rank says whether it can load libnccl (an
 * all-gather, so that all fail together naming the ranks without it instead of some waiting for
 * the others), rank 0 makes the unique id and broadcasts its 128 bytes over {@code host}, and each
 * rank creates its non-blocking {@link NcclCommunicator} with {@code host}'s timeout. Each
 * collective is enqueued on a stream of its own and awaited with that timeout, so calls block as
 * those of the own stages do. Errors name this rank of {@code host}; a failed call (which aborts
 * the NCCL communicator) leaves this object unusable.
 */
public final class NcclBackend implements DeviceBackend<DeviceMemory> {
    private final int rank;
    private final int size;
    private final Duration timeout;
    private final CudaStream stream;
    private final NcclCommunicator comm;
    private String failure;
    private boolean closed;

    private NcclBackend(int rank, int size, Duration timeout, CudaStream stream, NcclCommunicator comm) {
        this.rank = rank;
        this.size = size;
        this.timeout = timeout;
        this.stream = stream;
        this.comm = comm;
    }

    /** The NCCL communicator of {@code host}'s ranks, each on {@code context}'s device (collective over {@code host}).
     * */
    public static NcclBackend create(Communicator host, CudaContext context) {
        requireOnEveryRank(host, Nccl.isAvailable(), Nccl.unavailabilityCause());
        NcclUniqueId id = shareId(host, Nccl::newUniqueId);
        Duration timeout = Duration.ofNanos(host.timeoutNanos());
        CudaStream stream = context.createStream();
        try {
            NcclCommunicator comm = NcclCommunicator.create(context, host.rank(), host.size(), id, timeout);
            return new NcclBackend(host.rank(), host.size(), timeout, stream, comm);
        } catch (NcclException e) {
            stream.close();
            throw named(host.rank(), "creating the NCCL communicator of " + host.size() + " ranks", e);
        } catch (RuntimeException | Error e) {
            stream.close();
            throw e;
        }
    }

    /**
     * Fails on every rank of {@code host} when some rank cannot use NCCL, naming those ranks (and on
     * such a rank, why); returns on every rank otherwise. Collective over {@code host}.
     */
    static void requireOnEveryRank(Communicator host, boolean available, Throwable cause) {
        int n = host.size();
        List<Integer> missing = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mine = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment all = arena.allocate(ValueLayout.JAVA_INT, n);
            mine.set(ValueLayout.JAVA_INT, 0, available ? 1 : 0);
            host.allGather(mine, all, 1, DataType.INT32);
            for (int r = 0; r < n; r++) {
                if (all.getAtIndex(ValueLayout.JAVA_INT, r) == 0) {
                    missing.add(r);
                }
            }
        }
        if (!missing.isEmpty()) {
            String why = available ? "" : ": " + (cause == null ? "unknown cause" : cause.getMessage());
            throw new IllegalStateException("rank " + host.rank()
                    + ": the NCCL backend needs libnccl.so.2 on every rank; rank(s) "
                    + missing + " cannot load it" + why, available ? null : cause);
        }
    }

    /**
     * Rank 0 of {@code host} makes an id with {@code maker} and broadcasts it over {@code host}; every
     * rank returns it. When rank 0 cannot make one, every rank fails (rank 0 with the cause).
     */
    static NcclUniqueId shareId(Communicator host, Supplier<NcclUniqueId> maker) {
        RuntimeException made = null;
        try (Arena arena = Arena.ofConfined()) {
            // byte 0: 1 when the id that follows is good
            MemorySegment buf = arena.allocate(1 + NcclUniqueId.BYTE_SIZE);
            if (host.rank() == 0) {
                try {
                    byte[] id = maker.get().bytes();
                    buf.set(ValueLayout.JAVA_BYTE, 0, (byte) 1);
                    MemorySegment.copy(id, 0, buf, ValueLayout.JAVA_BYTE, 1, NcclUniqueId.BYTE_SIZE);
                } catch (RuntimeException e) {
                    made = e;
                }
            }
            host.broadcast(buf, buf.byteSize(), DataType.UINT8, 0);
            if (buf.get(ValueLayout.JAVA_BYTE, 0) != 1) {
                throw new IllegalStateException("rank " + host.rank() + ": rank 0 could not make the NCCL unique id"
                        + (made == null ? "" : ": " + made.getMessage()), made);
            }
            return new NcclUniqueId(buf.asSlice(1, NcclUniqueId.BYTE_SIZE).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public void run(Collective collective, String algorithm, DeviceMemory send, DeviceMemory recv, long count,
            DataType type,
                    ReduceOp op, int root) {
        if (closed) {
            throw new IllegalStateException("NCCL collectives of rank " + rank + " are closed");
        }
        if (failure != null) {
            throw new IllegalStateException("rank " + rank + ": an earlier NCCL collective failed (" + failure
                    + "); unusable");
        }
        if (count < 0) {
            throw new IllegalArgumentException("count " + count + " < 0");
        }
        if (count == 0) {
            return; // every rank passes the same count: nothing moves, and NCCL is not asked
        }
        try {
            switch (collective) {
                case ALL_REDUCE -> comm.allReduce(send, recv, count, type, op, stream);
                case REDUCE_SCATTER -> comm.reduceScatter(send, recv, count, type, op, stream);
                case ALL_GATHER -> comm.allGather(send, recv, count, type, stream);
                case BROADCAST -> comm.broadcast(send, recv, count, type, root, stream);
                default -> throw new UnsupportedOperationException("the NCCL backend runs all-reduce, reduce-scatter, "
                        + "all-gather "
                        + "and broadcast, not " + collective.label());
            }
            comm.await(stream, timeout);
        } catch (NcclException e) {
            failure = e.getMessage();
            throw named(rank, collective.label() + " of " + count + " elements", e);
        }
    }

    /** An NCCL error as a collective error naming the rank; a timeout as a {@link CollectiveTimeoutException}. */
    private static CollectiveException named(int rank, String what, NcclException e) {
        String m = "rank " + rank + ": " + what + " failed: " + e.getMessage();
        return e.isTimeout() ? new CollectiveTimeoutException(m, e) : new CollectiveException(m, e);
    }

    /** Destroys the NCCL communicator (once; aborted instead if it failed) and the stream. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            comm.close();
        } catch (NcclException e) {
            throw named(rank, "closing the NCCL communicator", e);
        } finally {
            stream.close();
        }
    }

    @Override
    public String toString() {
        return "NCCL collectives of rank " + rank + " of " + size;
    }
}
