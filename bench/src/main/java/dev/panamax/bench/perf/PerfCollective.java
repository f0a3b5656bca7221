package dev.panamax.bench.perf;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.util.Locale;

/**
 * The collectives panamax-perf and the JMH suite measure, with the nccl-tests conventions: their
 * command-line names, which size the {@code size} column shows, the per-rank element count, the
 * buffer sizes, and the bus-bandwidth factor. {@link #api()} is the library's {@link Collective}.
 */
public enum PerfCollective {
    ALLREDUCE("allreduce"),
    REDUCESCATTER("reducescatter"),
    ALLGATHER("allgather"),
    BROADCAST("broadcast"),
    REDUCE("reduce");

    private final String cliName;

    PerfCollective(String cliName) {
        this.cliName = cliName;
    }

    /** The command-line name ({@code allreduce}, ...). */
    public String cliName() {
        return cliName;
    }

    /** Accepts {@code allreduce}, {@code all_reduce}, {@code all-reduce}, {@code allReduce} and so on. */
    public static PerfCollective parse(String name) {
        String n = name.toLowerCase(Locale.ROOT).replace("_", "").replace("-", "");
        for (PerfCollective c : values()) {
            if (c.cliName.equals(n)) {
                return c;
            }
        }
        throw new IllegalArgumentException("unknown collective '" + name
                + "'; known: allreduce, reducescatter, allgather, broadcast, reduce");
    }

    /** The library's name for this collective (algorithm selection, schedules, the planner). */
    public Collective api() {
        return switch (this) {
            case ALLREDUCE -> Collective.ALL_REDUCE;
            case REDUCESCATTER -> Collective.REDUCE_SCATTER;
            case ALLGATHER -> Collective.ALL_GATHER;
            case BROADCAST -> Collective.BROADCAST;
            case REDUCE -> Collective.REDUCE;
        };
    }

    /** True when the collective applies a reduction operator. */
    public boolean reduces() {
        return this == ALLREDUCE || this == REDUCESCATTER || this == REDUCE;
    }

    /** True when the collective has a root rank. */
    public boolean rooted() {
        return this == BROADCAST || this == REDUCE;
    }

    /** busbw = algbw * factor: 2(n-1)/n for all-reduce, (n-1)/n for reduce-scatter and all-gather, 1 for broadcast and
     * reduce. */
    public double busBwFactor(int ranks) {
        return switch (this) {
            case ALLREDUCE -> 2.0 * (ranks - 1) / ranks;
            case REDUCESCATTER, ALLGATHER -> (double) (ranks - 1) / ranks;
            case BROADCAST, REDUCE -> 1.0;
        };
    }

    /**
     * The element count passed to the collective for a requested size in bytes: size / typeSize,
     * and for reduce-scatter and all-gather, where the size is that of the larger (whole) buffer,
     * size / typeSize / ranks per rank (rounded down, as nccl-tests does).
     */
    public long count(long sizeBytes, int typeSize, int ranks) {
        long elements = sizeBytes / typeSize;
        return (this == REDUCESCATTER || this == ALLGATHER) ? elements / ranks : elements;
    }

    /** Bytes of the send buffer for {@code count} (reduce-scatter sends ranks * count elements). */
    public long sendBytes(long count, int typeSize, int ranks) {
        return this == REDUCESCATTER ? count * typeSize * ranks : count * typeSize;
    }

    /** Bytes of the receive buffer for {@code count} (all-gather receives ranks * count elements). */
    public long recvBytes(long count, int typeSize, int ranks) {
        return this == ALLGATHER ? count * typeSize * ranks : count * typeSize;
    }

    /** The {@code size} column: the bytes of the larger buffer, which algbw is computed from. */
    public long sizeBytes(long count, int typeSize, int ranks) {
        return Math.max(sendBytes(count, typeSize, ranks), recvBytes(count, typeSize, ranks));
    }

    /** Runs the collective once. */
    public void run(Communicator comm, MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op,
            int root) {
        switch (this) {
            case ALLREDUCE -> comm.allReduce(send, recv, count, type, op);
            case REDUCESCATTER -> comm.reduceScatter(send, recv, count, type, op);
            case ALLGATHER -> comm.allGather(send, recv, count, type);
            case BROADCAST -> comm.broadcast(send, recv, count, type, root);
            case REDUCE -> comm.reduce(send, recv, count, type, op, root);
        }
    }

    /**
     * Runs the pre-multiplied sum of this reducing collective, every rank's scalar 1/ranks (an average whose inputs
     * are scaled first).
     */
    public void runPreMulSum(Communicator comm, MemorySegment send, MemorySegment recv, long count, DataType type,
            int root) {
        double scalar = 1.0 / comm.size();
        switch (this) {
            case ALLREDUCE -> comm.allReducePreMulSum(send, recv, count, type, scalar);
            case REDUCESCATTER -> comm.reduceScatterPreMulSum(send, recv, count, type, scalar);
            case REDUCE -> comm.reducePreMulSum(send, recv, count, type, scalar, root);
            default -> throw new IllegalArgumentException(cliName + " does not reduce");
        }
    }
}
