package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import java.util.List;

/**
 * A group of ranks that run collectives together. Every rank calls the same collectives in the
 * same order with matching arguments. Counts are in elements of the given {@link DataType}; a
 * send and receive segment may be the same segment (in place).
 *
 * <p>Blocking calls return when this rank's part is done and its receive buffer holds the result.
 * Every wait is bounded by the communicator's timeout; a peer that dies or stops answering turns
 * into a {@link CollectiveException} naming it. Asynchronous calls run in issue order on a
 * per-communicator worker and complete their future the same way; buffers passed to them must
 * stay untouched until the future completes.
 *
 * <p>Buffers from {@link #allocate} live in shared memory that peers on the same host read
 * directly, so collectives on them copy nothing through staging.
 */
public interface Communicator extends AutoCloseable {

    /** This rank, 0 &lt;= rank &lt; size. */
    int rank();

    /** The number of ranks. */
    int size();

    /** The name of the transport used to reach {@code peer} ({@code local}, {@code shm}, {@code tcp}, {@code self}). */
    String transportTo(int peer);

    /** recv[i] = op over all ranks of send[i], i &lt; count, on every rank. */
    void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op);

    /** In-place all-reduce of {@code count} elements of {@code buffer}. */
    default void allReduce(MemorySegment buffer, long count, DataType type, ReduceOp op) {
        allReduce(buffer, buffer, count, type, op);
    }

    /**
     * All-reduce of float32 or float64 data ({@code type}) sent on the wire as {@code wireType}, bfloat16 or
     * float16 (half the bytes of float32, a quarter of float64), with every partial result kept in {@code type}:
     * each rank's values are rounded to the wire type once, reduced in {@code type} in rank order (an average is
     * divided there too), and the result rounded to the wire type once, whatever the rank count (a direct
     * reduce-scatter and an all-gather of wire-type blocks). So each element is within about {@code 2 u}
     * (relative) of the exact reduction of its inputs as rounded, u the wire type's unit roundoff (2^-8 for
     * bfloat16, 2^-11 for float16), against {@code (size - 1) u} and more for a ring all-reduce in the wire type.
     * float16 saturates to infinity above 65504: scale the data first. The same bits on every rank and every run.
     * A {@code wireType} equal to {@code type} is the plain {@link #allReduce}.
     */
    void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, DataType wireType,
            ReduceOp op);

    /**
     * Pre-multiplied sum (NCCL's {@code ncclRedOpCreatePreMulSum}): {@code recv[i] = sum over ranks r of
     * scalar_r * send_r[i]}, each rank passing its own {@code scalar}, which multiplies its input as it enters the
     * sum, in the type's precision (float32 by the scalar as a float32; the product rounds to the type, then the
     * sum). Floating-point types only. The scaling rides on the algorithm's own first reads of each input (a copy,
     * reduction or receive that reads it multiplies it on the way; a part a rank sends as it is, its receiver
     * multiplies by the sender's scalar), so no pass is added and large calls cost what the plain sum costs; the
     * ranks first exchange their scalars (an all-gather of one float64 each), which small calls pay for. With
     * every scalar {@code 1 / size} it is an average whose inputs are scaled before they are added, so a float16
     * sum that would overflow does not. The result has the same bits as scaling each input first and summing with
     * {@code SUM}.
     */
    void allReducePreMulSum(MemorySegment send, MemorySegment recv, long count, DataType type, double scalar);

    /**
     * {@link #reduceScatter} of a pre-multiplied sum: rank r receives block r of
     * {@code sum over ranks q of scalar_q * send_q}, each rank passing its own {@code scalar}
     * (see {@link #allReducePreMulSum}).
     */
    void reduceScatterPreMulSum(MemorySegment send, MemorySegment recv, long recvCount, DataType type, double scalar);

    /**
     * Several in-place all-reduces run at once: {@code buffers.get(j)} is all-reduced over its first
     * {@code counts[j]} elements, every rank passing the same counts in the same order. Their
     * schedules run interleaved (stage i of each together, every transfer of a round posted at
     * once), so they share round trips instead of queueing one behind another: [ASC-WFBP]'s
     * simultaneous all-reduces, whose contention factor gamma this call realizes. Each uses the
     * algorithm a plain {@link #allReduce} of its count would, unless that algorithm's transfers
     * are not stage-aligned ({@code Simulator.stageAligned}), then the ring. The buffers must not
     * overlap. Returns when all are done.
     */
    void allReduceConcurrently(List<MemorySegment> buffers, long[] counts, DataType type, ReduceOp op);

    /**
     * NCCL semantics: {@code send} holds {@code size * recvCount} elements; rank r receives the
     * reduction of block r (elements {@code [r*recvCount, (r+1)*recvCount)}) in {@code recv}.
     */
    void reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op);

    /** NCCL semantics: {@code recv} holds {@code size * sendCount} elements, block r from rank r. */
    void allGather(MemorySegment send, MemorySegment recv, long sendCount, DataType type);

    /**
     * Reduce-scatter with a block length per rank (MPI's reduce-scatter-v): {@code send} holds the
     * blocks one after the other, block r of {@code counts[r]} elements (any may be 0); rank r
     * receives the reduction of every rank's block r in the first {@code counts[r]} elements of
     * {@code recv}. {@code recv} may be this rank's block of {@code send} (in place). Runs the
     * fixed-block {@link #reduceScatter} on blocks padded to the longest one, so it has its
     * algorithms, transports and reduction order; equal blocks cost nothing extra.
     *
     * @throws IllegalArgumentException when {@code counts} does not have one non-negative length
     *                                  per rank or a buffer is too small for its blocks
     */
    void reduceScatterV(MemorySegment send, MemorySegment recv, long[] counts, DataType type, ReduceOp op);

    /**
     * All-gather with a block length per rank (MPI's all-gather-v): this rank's {@code counts[rank]}
     * elements of {@code send} become block {@code rank} of every rank's {@code recv}, where the
     * blocks lie one after the other, block r of {@code counts[r]} elements (any may be 0).
     * {@code send} may be this rank's block of {@code recv} (in place). Runs the fixed-block
     * {@link #allGather} on blocks padded to the longest one.
     *
     * @throws IllegalArgumentException as {@link #reduceScatterV(MemorySegment, MemorySegment, long[], DataType,
     *                                  ReduceOp)}
     */
    void allGatherV(MemorySegment send, MemorySegment recv, long[] counts, DataType type);

    /**
     * Reduce-scatter of opaque items with a user-defined reduction: as
     * {@link #reduceScatterV(MemorySegment, MemorySegment, long[], DataType, ReduceOp)}, with blocks
     * of {@code itemCounts[r]} items of {@code itemBytes} bytes each, reduced by {@code reducer}.
     * Each block goes straight to its rank (one all-to-all), which folds the contributions in rank
     * order, {@code ((rank 0 (+) rank 1) (+) rank 2) ...}: the same bits on every run. An exception of
     * the reducer is thrown on the rank that ran it, after the exchange (the other ranks are not held
     * up by it).
     */
    void reduceScatterV(MemorySegment send, MemorySegment recv, long[] itemCounts, int itemBytes,
            ItemReducer reducer);

    /**
     * In-place all-reduce of opaque items with a user-defined reduction: {@code buffer} holds
     * {@code itemCount} items of {@code itemBytes} bytes; afterwards every rank's buffer holds, item
     * by item, the fold of every rank's item in rank order, {@code ((rank 0 (+) rank 1) (+) rank 2) ...},
     * the same bits on every rank and every run (so {@code reducer} need not be commutative). Runs as
     * {@link #reduceScatterV(MemorySegment, MemorySegment, long[], int, ItemReducer)} over near-equal
     * blocks of items, then {@link #allGatherV} of the bytes.
     *
     * @throws IllegalArgumentException when {@code itemCount < 0}, {@code itemBytes < 1} or the buffer
     *                                  is too small
     */
    void allReduce(MemorySegment buffer, long itemCount, int itemBytes, ItemReducer reducer);

    /**
     * Reduce of opaque items to {@code root} with a user-defined reduction: {@code send} holds
     * {@code itemCount} items of {@code itemBytes} bytes; afterwards root's {@code recv} holds, item by
     * item, the rank-order fold as {@link #allReduce(MemorySegment, long, int, ItemReducer)} computes it
     * ({@code recv} is used only at the root and may be {@code send} there). Runs as the item
     * reduce-scatter over near-equal blocks, then each rank sends its block to the root.
     *
     * @throws IllegalArgumentException as {@link #allReduce(MemorySegment, long, int, ItemReducer)}, or
     *                                  when {@code root} is not a rank
     */
    void reduce(MemorySegment send, MemorySegment recv, long itemCount, int itemBytes, ItemReducer reducer, int root);

    /** Copies root's {@code send} into every rank's {@code recv} ({@code send} is read only at root). */
    void broadcast(MemorySegment send, MemorySegment recv, long count, DataType type, int root);

    /** In-place broadcast of root's {@code buffer}. */
    default void broadcast(MemorySegment buffer, long count, DataType type, int root) {
        broadcast(buffer, buffer, count, type, root);
    }

    /** recv at root = op over all ranks of send; {@code recv} is written only at root. */
    void reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root);

    /**
     * {@link #reduce} of a pre-multiplied sum: recv at root = {@code sum over ranks q of scalar_q * send_q}, each
     * rank passing its own {@code scalar} (see {@link #allReducePreMulSum}).
     */
    void reducePreMulSum(MemorySegment send, MemorySegment recv, long count, DataType type, double scalar, int root);

    /** Returns once every rank has entered the barrier. */
    void barrier();

    /**
     * All-to-all: block q (elements {@code [q*count, (q+1)*count)}) of this rank's {@code send}
     * goes to rank q, which receives it as its block r. Not in place.
     */
    void allToAll(MemorySegment send, MemorySegment recv, long count, DataType type);

    /**
     * Point-to-point send of {@code count} elements to {@code peer}; matched in order with the
     * peer's {@link #recv} from this rank. Returns when the data is handed over.
     */
    void send(MemorySegment buffer, long count, DataType type, int peer);

    /** Point-to-point receive of {@code count} elements from {@code peer} (see {@link #send}). */
    void recv(MemorySegment buffer, long count, DataType type, int peer);

    /**
     * MPI_Comm_split: collective over this communicator. Ranks passing the same {@code color} form
     * a new communicator, ordered by {@code key} and then by rank here; a rank passing
     * {@link #UNDEFINED} gets {@code null}. The new communicator shares this one's transports: the
     * ranks of the parent and its splits must issue their collectives in one consistent order.
     * Closing it leaves the parent open; closing the parent closes it.
     */
    Communicator split(int color, int key);

    /** The color that {@link #split} leaves out. */
    int UNDEFINED = -1;

    /**
     * The network hierarchy used by hierarchical algorithms and the planner: configured
     * ({@code PANAMAX_TOPOLOGY}, {@link #setTopology}) or detected (ranks on one host form the
     * innermost level when every host has as many).
     */
    Topology topology();

    /** Sets the topology; call it with the same value on every rank, between collectives. */
    void setTopology(Topology topology);

    /**
     * Selects the algorithm for later calls of {@code collective}: a name from
     * {@code dev.panamax.collectives.algorithms.Algorithms}, or {@code auto} (the default: the
     * planner chooses by size and topology). Call it with the same value on every rank.
     */
    void setAlgorithm(Collective collective, String algorithm);

    /**
     * Turns cross-rank call validation on or off: before each collective the ranks exchange a
     * descriptor of their call (collective, type, operation, count, root, algorithm) and throw
     * {@link MismatchedCallException} on every rank when they differ. Off by default
     * ({@code PANAMAX_VALIDATE=1} turns it on for a job); costs one small all-gather per call. Call
     * it with the same value on every rank, between collectives.
     */
    void setCallValidation(boolean on);

    /** Whether call validation is on. */
    boolean callValidation();

    /**
     * Deterministic mode: {@code auto} chooses by the call and the rank count only (the planner on
     * a flat topology with default figures), never by a detected or measured topology, so that a
     * job gets bitwise identical results run to run. Every algorithm already reduces each element
     * in an order fixed by its schedule (docs/guide/algorithms.md); only the choice needs pinning.
     * {@code PANAMAX_DETERMINISTIC=1} turns it on for a job. Same value on every rank.
     */
    void setDeterministic(boolean on);

    /** Whether deterministic mode is on. */
    boolean deterministic();

    /** The algorithm selected for {@code collective} ({@code auto} unless set). */
    String algorithm(Collective collective);

    /** What {@link #plannedAlgorithm} names an all-reduce that runs over the ranks' shared windows. */
    String SHARED_WINDOWS = "window";

    /**
     * The algorithm a call of {@code collective} on {@code count} elements of {@code type} would run now on this
     * rank (every rank answers alike): the {@link #setAlgorithm selected} one, or the one {@code auto} chooses for
     * the size and topology, or {@link #SHARED_WINDOWS} for a small all-reduce (plain or pre-multiplied sum) among
     * ranks that all share memory, which runs no schedule. {@code count} is per rank where the collective's is
     * (reduce-scatter's receive count, all-gather's send count); {@code root} matters for broadcast and reduce
     * only, and barrier ignores count and type. Moves nothing.
     *
     * @throws IllegalArgumentException when the count is negative or the root is not a rank
     */
    String plannedAlgorithm(Collective collective, long count, DataType type, int root);

    /** Asynchronous {@link #allReduce(MemorySegment, MemorySegment, long, DataType, ReduceOp)}. */
    CompletableFuture<Void> allReduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type,
            ReduceOp op);

    /** Asynchronous {@link #reduceScatter}. */
    CompletableFuture<Void> reduceScatterAsync(MemorySegment send, MemorySegment recv, long recvCount, DataType type,
            ReduceOp op);

    /** Asynchronous {@link #allGather}. */
    CompletableFuture<Void> allGatherAsync(MemorySegment send, MemorySegment recv, long sendCount, DataType type);

    /** Asynchronous {@link #broadcast(MemorySegment, MemorySegment, long, DataType, int)}. */
    CompletableFuture<Void> broadcastAsync(MemorySegment send, MemorySegment recv, long count, DataType type, int root);

    /** Asynchronous {@link #reduce}. */
    CompletableFuture<Void> reduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op,
            int root);

    /** Asynchronous {@link #barrier}. */
    CompletableFuture<Void> barrierAsync();

    /** Asynchronous {@link #allToAll}. */
    CompletableFuture<Void> allToAllAsync(MemorySegment send, MemorySegment recv, long count, DataType type);

    /**
     * A zeroed, page-aligned buffer in memory that same-host peers can read directly (zero-copy for
     * the shared-memory transport). Local, not collective. Freed when the communicator closes or
     * by {@link #free}.
     */
    MemorySegment allocate(long byteSize);

    /** Frees a buffer from {@link #allocate} now. */
    void free(MemorySegment buffer);

    /** The timeout of every wait inside a collective, in nanoseconds. */
    long timeoutNanos();

    /** Releases transports, shared memory and threads. Idempotent. Pending async calls fail. */
    @Override
    void close();

    /**
     * Marks the communicator broken on every rank, from any thread, without closing it (ULFM's
     * {@code MPI_Comm_revoke}). Never blocks:
     * <ul>
     * <li>a collective running on this rank throws {@link RevokedException} at once, and every later
     *     call on this communicator (and on those {@link #split} from it, which share its links) throws
     *     it too;</li>
     * <li>the other ranks learn it through the links: their pending and later collectives throw
     *     {@link RevokedException} naming this rank (within a liveness check, about 50 ms, also when
     *     they wait on a different, live peer), and each passes it on to its own peers, so it reaches
     *     every rank even if this one dies right after;</li>
     * <li>{@link #agree}, {@link #shrink} and {@link #close} still work.</li>
     * </ul>
     * Idempotent; revoking a communicator that already failed changes nothing.
     */
    void revoke();

    /**
     * Fault-tolerant agreement (ULFM's {@code MPIX_Comm_agree}): collective over the ranks of this
     * communicator that are alive, also after a failure or a {@link #revoke}. Every rank that returns
     * gets the same {@link Agreement}: the AND of the flags of the ranks that took part, and the ranks
     * counted as failed (dead, closed, or not calling within the timeout), even when more ranks die
     * during the agreement. Agreement runs through the job's rendezvous store (in-JVM ranks: a shared
     * object), not the links.
     *
     * @throws CollectiveException when this rank was itself counted as failed (it called after the
     *                             others gave up on it) or the store is unreachable (its host died)
     */
    Agreement agree(long flags);

    /**
     * A new communicator of the ranks that are still alive (ULFM's {@code MPIX_Comm_shrink}):
     * collective over the survivors, also after a failure or a {@link #revoke}. They first
     * {@link #agree} on who failed, then connect anew over the transport this communicator was built
     * with, keeping their order: ranks are dense, from 0. This communicator stays as it is (close it).
     * The new one starts with {@code auto} algorithms and a detected topology, and keeps call
     * validation and deterministic mode.
     *
     * <p>Every survivor gets a working communicator of the same members, or every survivor throws the
     * same {@link PeerFailedException} (a rank died while they connected): call {@code shrink()} again.
     *
     * @throws CollectiveException as {@link #agree}
     */
    Communicator shrink();

    /**
     * A communicator of this one's ranks and {@code newRanks} processes that join the job
     * ({@link CommunicatorBuilder#join()}): collective over this communicator, which stays as it is.
     * Its ranks keep their numbers; the joiners get ranks {@code size()} to {@code size() + newRanks - 1}
     * in the order they reached the rendezvous store. Hand the state over with a {@link #broadcast}
     * from a rank that has it. Keeps call validation and deterministic mode, as {@link #shrink} does.
     *
     * @throws CollectiveTimeoutException    when fewer processes joined within the timeout (every rank)
     * @throws UnsupportedOperationException for in-JVM ranks ({@link Panamax#local}), which nothing can join
     */
    Communicator grow(int newRanks);

    /**
     * Abandons the communicator, from any thread, also while another thread is inside a collective
     * on it. Never blocks, and idempotent:
     * <ul>
     * <li>every wait of this rank ends at once: a blocking call in progress throws a
     *     {@link CollectiveException} saying it was aborted, and pending asynchronous calls complete
     *     exceptionally;</li>
     * <li>the transports are closed at once, which the peers see as this rank gone: their waits on
     *     it fail with a {@link PeerFailedException} naming this rank (within about 50 ms on shared
     *     memory and in-JVM, at once on TCP), even if some other peer is frozen;</li>
     * <li>the communicator is unusable from then on (later calls throw {@link IllegalStateException});</li>
     * <li>its resources are released as by {@link #close()}: at once when no collective is running,
     *     else by the collective's thread as it leaves. {@code close()} after {@code abort()} is a
     *     no-op.</li>
     * </ul>
     * A communicator and those {@link #split} from it (and theirs) share their transports, so
     * aborting any of them aborts the whole family: the parent and every sub-communicator.
     */
    void abort();
}
