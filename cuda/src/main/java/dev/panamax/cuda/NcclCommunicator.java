package dev.panamax.cuda;

import dev.panamax.bindings.cuda.cuda_h;
import dev.panamax.bindings.nccl.ncclConfig_v21700;
import dev.panamax.bindings.nccl.nccl_h;
import dev.panamax.bindings.nccl.ncclUniqueId;
import dev.panamax.bindings.nccl.support.NcclConfig;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntSupplier;
import java.util.function.Supplier;

/**
 * One rank of a <em>non-blocking</em> NCCL communicator ({@code ncclComm_t}, created with
 * {@code ncclConfig_t.blocking = 0}) on the device of a {@link CudaContext}.
 *
 * <p>No NCCL call of a non-blocking communicator waits for other ranks: creation, {@link #finish()} and the
 * operations may return {@code ncclInProgress} and go on in the background. This class polls
 * {@code ncclCommGetAsyncError} where it has to wait (creation, {@link #finish()}, {@link #await}), always with
 * a timeout; when the time runs out, or NCCL reports an error, it aborts the communicator
 * ({@code ncclCommAbort}) and throws an {@link NcclException}. An operation that returns
 * {@code ncclInProgress} has not necessarily reached its stream yet: the next call on this communicator first
 * waits for that (with the creation timeout), and {@link #await} covers it too, so wait with {@link #await}
 * rather than with {@link CudaStream#synchronize()} alone.
 *
 * <p>Buffers and streams must belong to the communicator's context; sizes, counts, ranks and contexts are
 * checked before any native call. A communicator is for one thread at a time, except {@link #abort()}, which
 * any thread may call to stop a wait. The native communicator is released exactly once: by {@link #close()}
 * ({@code ncclCommFinalize}, then {@code ncclCommDestroy}, when healthy; {@code ncclCommAbort} otherwise), by
 * {@link #abort()}, or by the abort that follows an error or timeout. Afterwards every method but
 * {@link #close()} and {@link #abort()} (which then do nothing) throws {@link IllegalStateException}.
 */
public final class NcclCommunicator implements AutoCloseable {
    /** Polls that spin before the waits start parking: the first microseconds of a wait stay responsive. */
    private static final long SPIN_POLLS = 2000;
    private static final long PARK_NANOS = 20_000;
    /** Communicators that took part in the open group of each thread ({@link #groupStart()}). */
    private static final ThreadLocal<Group> GROUP = ThreadLocal.withInitial(Group::new);

    private final CudaContext context;
    private final int rank;
    private final int size;
    private final MemorySegment comm;
    private final Duration timeout;
    private final AtomicBoolean closeCalled = new AtomicBoolean();
    /** Guarded by {@code this}: the native communicator has been destroyed or aborted. */
    private boolean released;
    /** Why it can no longer be used; null while usable. */
    private volatile String endReason;
    /** An operation returned ncclInProgress: the communicator must leave that state before the next call. */
    private volatile boolean pending;
    private volatile boolean finalized;

    NcclCommunicator(CudaContext context, int rank, int size, MemorySegment comm, Duration timeout) {
        this.context = context;
        this.rank = rank;
        this.size = size;
        this.comm = comm;
        this.timeout = timeout;
    }

    /**
     * Creates rank {@code rank} of a communicator of {@code size} ranks ({@code ncclCommInitRankConfig}, non-blocking)
     * and waits until it is ready. Every rank calls this with the same {@code id}, {@code size} and its own rank,
     * each on its own device (NCCL does not support two ranks of one communicator on the same device).
     *
     * @param timeout the longest wait for the creation; also the longest wait for a pending operation to reach
     *                its stream before the next call, and for {@link #finish()} and {@link #close()}
     * @throws IllegalArgumentException when a rank is out of range or the timeout is not positive
     * @throws IllegalStateException    when NCCL is not available or the context is closed
     * @throws NcclException            when NCCL fails or the creation does not finish in time (the partly
     *                                  created communicator is aborted)
     */
    public static NcclCommunicator create(CudaContext context, int rank, int size, NcclUniqueId id,
                                          Duration timeout) {
        Objects.requireNonNull(context, "context");
        Objects.requireNonNull(id, "id");
        requirePositive(timeout);
        if (size < 1) {
            throw new IllegalArgumentException("communicator size must be >= 1: " + size);
        }
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank " + rank + " is not in [0, " + size + ")");
        }
        context.requireOpen();
        Nccl.requireAvailable();
        context.setCurrent(); // NCCL binds the communicator to the current device
        String call = "ncclCommInitRankConfig(rank " + rank + " of " + size + ", blocking 0)";
        MemorySegment handle;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pcomm = arena.allocate(ValueLayout.ADDRESS);
            MemorySegment uid = arena.allocate(ncclUniqueId.layout());
            MemorySegment.copy(id.bytes(), 0, uid, ValueLayout.JAVA_BYTE, 0, NcclUniqueId.BYTE_SIZE);
            // ncclConfig_t config = NCCL_CONFIG_INITIALIZER; config.blocking = 0;
            // where nccl.h defines
            //   #define NCCL_CONFIG_INITIALIZER {
            //     sizeof(ncclConfig_t),                             /* size */
            //     0xcafebeef,                                       /* magic */
            //     NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), /* version */
            //     NCCL_CONFIG_UNDEF_INT,                            /* blocking */
            //     ... every other field NCCL_CONFIG_UNDEF_INT (INT_MIN) or NCCL_CONFIG_UNDEF_PTR (NULL)
            //   }
            // NcclConfig.allocate writes exactly that (with the version of the bindings' header, 2.18.1).
            MemorySegment config = NcclConfig.allocate(arena);
            ncclConfig_v21700.blocking(config, 0);
            int rc = nccl_h.ncclCommInitRankConfig(pcomm, size, uid, rank, config);
            handle = pcomm.get(ValueLayout.ADDRESS, 0);
            if (rc != nccl_h.ncclSuccess() && rc != nccl_h.ncclInProgress()) {
                NcclException e = NcclCalls.error(call, rc, handle);
                if (handle.address() != 0) {
                    int arc = nccl_h.ncclCommAbort(handle);
                    if (arc != nccl_h.ncclSuccess() && arc != nccl_h.ncclInProgress()) {
                        e.addSuppressed(NcclCalls.error("ncclCommAbort(rank " + rank + " of " + size + ")", arc,
                                handle));
                    }
                }
                throw e;
            }
            if (handle.address() == 0) {
                throw new IllegalStateException(call + " returned " + NcclCalls.resultName(rc)
                        + " but no communicator");
            }
        }
        NcclCommunicator c = new NcclCommunicator(context, rank, size, handle, timeout);
        c.waitUntilReady(call, timeout);
        return c;
    }

    /** This rank, in {@code [0, size)}. */
    public int rank() {
        return rank;
    }

    /** The number of ranks. */
    public int size() {
        return size;
    }

    /** The context whose device this rank uses. */
    public CudaContext context() {
        return context;
    }

    /** The timeout given at creation, used for pending operations, {@link #finish()} and {@link #close()}. */
    public Duration timeout() {
        return timeout;
    }

    /** The {@code ncclComm_t}, for calls this API does not wrap. */
    public MemorySegment handle() {
        requireUsable();
        return comm;
    }

    /** Whether it can still be used: not finalized, closed or aborted. */
    public boolean isUsable() {
        return endReason == null && !finalized;
    }

    /**
     * Sums (or otherwise reduces, by {@code op}) {@code count} elements of every rank's {@code send} into every
     * rank's {@code recv} ({@code ncclAllReduce}); in place when {@code send} and {@code recv} are the same memory.
     * Asynchronous on {@code stream}: wait with {@link #await}.
     */
    public void allReduce(DeviceMemory send, DeviceMemory recv, long count, DataType type, ReduceOp op,
                          CudaStream stream) {
        requireUsable();
        requireTypeAndOp(type, op);
        long bytes = byteCount(count, 1, type, "count");
        requireBuffer(send, bytes, "send");
        requireBuffer(recv, bytes, "recv");
        requireStream(stream);
        enqueue(() -> nccl_h.ncclAllReduce(pointer(send), pointer(recv), count, NcclCalls.dataType(type),
                NcclCalls.redOp(op, size), comm, stream.rawHandle()),
                () -> "ncclAllReduce(count " + count + ", " + type.canonicalName() + ", " + op + ", " + this + ")");
    }

    /**
     * Reduces {@code size * recvCount} elements of every rank's {@code send} and leaves block {@code rank} of the
     * result ({@code recvCount} elements) in {@code recv} ({@code ncclReduceScatter}). In place when {@code recv}
     * is block {@code rank} of {@code send}.
     */
    public void reduceScatter(DeviceMemory send, DeviceMemory recv, long recvCount, DataType type, ReduceOp op,
                              CudaStream stream) {
        requireUsable();
        requireTypeAndOp(type, op);
        requireBuffer(send, byteCount(recvCount, size, type, "recvCount"), "send");
        requireBuffer(recv, byteCount(recvCount, 1, type, "recvCount"), "recv");
        requireStream(stream);
        enqueue(() -> nccl_h.ncclReduceScatter(pointer(send), pointer(recv), recvCount, NcclCalls.dataType(type),
                NcclCalls.redOp(op, size), comm, stream.rawHandle()),
                () -> "ncclReduceScatter(recvCount " + recvCount + ", " + type.canonicalName() + ", " + op
                + ", " + this + ")");
    }

    /**
     * Gathers {@code sendCount} elements from every rank's {@code send} into every rank's {@code recv}, rank
     * {@code r}'s at element {@code r * sendCount} ({@code ncclAllGather}). In place when {@code send} is block
     * {@code rank} of {@code recv}.
     */
    public void allGather(DeviceMemory send, DeviceMemory recv, long sendCount, DataType type, CudaStream stream) {
        requireUsable();
        Objects.requireNonNull(type, "type");
        requireBuffer(send, byteCount(sendCount, 1, type, "sendCount"), "send");
        requireBuffer(recv, byteCount(sendCount, size, type, "sendCount"), "recv");
        requireStream(stream);
        enqueue(() -> nccl_h.ncclAllGather(pointer(send), pointer(recv), sendCount, NcclCalls.dataType(type), comm,
                stream.rawHandle()),
                () -> "ncclAllGather(sendCount " + sendCount + ", " + type.canonicalName() + ", " + this + ")");
    }

    /**
     * Copies {@code count} elements of {@code send} on rank {@code root} into {@code recv} on every rank
     * ({@code ncclBroadcast}). {@code send} is read on the root only and may be null elsewhere; in place when
     * {@code send} and {@code recv} are the same memory.
     */
    public void broadcast(DeviceMemory send, DeviceMemory recv, long count, DataType type, int root,
                          CudaStream stream) {
        requireUsable();
        Objects.requireNonNull(type, "type");
        requireRank(root, "root");
        long bytes = byteCount(count, 1, type, "count");
        if (rank == root || send != null) {
            requireBuffer(send, bytes, "send");
        }
        requireBuffer(recv, bytes, "recv");
        requireStream(stream);
        enqueue(() -> nccl_h.ncclBroadcast(pointerOrNull(send), pointer(recv), count, NcclCalls.dataType(type), root,
                comm,
                stream.rawHandle()),
                () -> "ncclBroadcast(count " + count + ", " + type.canonicalName() + ", root " + root + ", "
                + this + ")");
    }

    /**
     * Reduces {@code count} elements of every rank's {@code send} into {@code recv} on rank {@code root}
     * ({@code ncclReduce}). {@code recv} is written on the root only and may be null elsewhere.
     */
    public void reduce(DeviceMemory send, DeviceMemory recv, long count, DataType type, ReduceOp op, int root,
                       CudaStream stream) {
        requireUsable();
        requireTypeAndOp(type, op);
        requireRank(root, "root");
        long bytes = byteCount(count, 1, type, "count");
        requireBuffer(send, bytes, "send");
        if (rank == root || recv != null) {
            requireBuffer(recv, bytes, "recv");
        }
        requireStream(stream);
        enqueue(() -> nccl_h.ncclReduce(pointer(send), pointerOrNull(recv), count, NcclCalls.dataType(type),
                NcclCalls.redOp(op, size), root, comm, stream.rawHandle()),
                () -> "ncclReduce(count " + count + ", " + type.canonicalName() + ", " + op + ", root " + root
                + ", " + this + ")");
    }

    /**
     * Sends {@code count} elements of {@code buffer} to rank {@code peer} ({@code ncclSend}); the peer posts the
     * matching {@link #recv}. Send and receive pairs that depend on each other (including a rank with itself)
     * go between {@link #groupStart()} and {@link #groupEnd()}.
     */
    public void send(DeviceMemory buffer, long count, DataType type, int peer, CudaStream stream) {
        requireUsable();
        Objects.requireNonNull(type, "type");
        requireRank(peer, "peer");
        requireBuffer(buffer, byteCount(count, 1, type, "count"), "send");
        requireStream(stream);
        enqueue(() -> nccl_h.ncclSend(pointer(buffer), count, NcclCalls.dataType(type), peer, comm, stream.rawHandle()),
                () -> "ncclSend(count " + count + ", " + type.canonicalName() + ", peer " + peer + ", " + this + ")");
    }

    /** Receives {@code count} elements from rank {@code peer} into {@code buffer} ({@code ncclRecv}); see {@link
     * #send}. */
    public void recv(DeviceMemory buffer, long count, DataType type, int peer, CudaStream stream) {
        requireUsable();
        Objects.requireNonNull(type, "type");
        requireRank(peer, "peer");
        requireBuffer(buffer, byteCount(count, 1, type, "count"), "recv");
        requireStream(stream);
        enqueue(() -> nccl_h.ncclRecv(pointer(buffer), count, NcclCalls.dataType(type), peer, comm, stream.rawHandle()),
                () -> "ncclRecv(count " + count + ", " + type.canonicalName() + ", peer " + peer + ", " + this + ")");
    }

    /**
     * Starts a group on the calling thread ({@code ncclGroupStart}): the operations up to the matching
     * {@link #groupEnd()} are issued together. Groups nest.
     */
    public static void groupStart() {
        Nccl.requireAvailable();
        int rc = nccl_h.ncclGroupStart();
        if (rc != nccl_h.ncclSuccess()) {
            throw NcclCalls.error("ncclGroupStart", rc, null);
        }
        GROUP.get().depth++;
    }

    /**
     * Ends the calling thread's innermost group ({@code ncclGroupEnd}). For non-blocking communicators the group
     * may still be in progress afterwards: {@link #await} waits for it.
     *
     * @throws IllegalStateException when this thread has no open group
     */
    public static void groupEnd() {
        Group group = GROUP.get();
        if (group.depth == 0) {
            throw new IllegalStateException("groupEnd() without groupStart() on this thread");
        }
        Nccl.requireAvailable();
        int rc = nccl_h.ncclGroupEnd();
        group.depth--;
        List<NcclCommunicator> members = List.of();
        if (group.depth == 0) {
            members = new ArrayList<>(group.members);
            group.members.clear();
        }
        if (rc == nccl_h.ncclInProgress()) {
            members.forEach(c -> c.pending = true);
        } else if (rc != nccl_h.ncclSuccess()) {
            throw NcclCalls.error("ncclGroupEnd", rc, null);
        }
    }

    /**
     * The communicator's asynchronous error ({@code ncclCommGetAsyncError}), if it has one; empty while it is
     * healthy or still busy ({@code ncclInProgress}). Does not abort: {@link #abort()} or {@link #close()} does.
     */
    public Optional<NcclException> asyncError() {
        requireUsable();
        try (Arena arena = Arena.ofConfined()) {
            int state = queryState(arena.allocate(ValueLayout.JAVA_INT));
            if (state == nccl_h.ncclSuccess() || state == nccl_h.ncclInProgress()) {
                return Optional.empty();
            }
            return Optional.of(NcclCalls.error("ncclCommGetAsyncError(" + this + ")", state, comm));
        }
    }

    /**
     * Waits until this communicator's operations have reached {@code stream} and the stream has run everything
     * queued on it: polls {@code ncclCommGetAsyncError} and {@code cuStreamQuery}.
     *
     * @throws NcclException when NCCL reports an error or the time runs out; the communicator is then aborted
     */
    public void await(CudaStream stream, Duration timeout) {
        requireUsable();
        requireStream(stream);
        requirePositive(timeout);
        long limit = nanos(timeout);
        long start = System.nanoTime();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(ValueLayout.JAVA_INT);
            for (long polls = 0; ; polls++) {
                int s = queryState(state);
                if (s == nccl_h.ncclSuccess()) {
                    pending = false;
                    if (streamIdle(stream)) {
                        return;
                    }
                } else if (s != nccl_h.ncclInProgress()) {
                    throw failAndAbort(NcclCalls.error("await(" + stream + ", " + this + "): asynchronous error", s,
                            comm));
                }
                if (System.nanoTime() - start >= limit) {
                    throw failAndAbort(NcclCalls.timeout("await(" + stream + ", " + this + ") did not finish within "
                            + timeout.toMillis() + " ms; the communicator was aborted", comm));
                }
                pause(polls);
            }
        }
    }

    /**
     * Finalizes the communicator ({@code ncclCommFinalize}): flushes its operations and waits, at most the
     * creation timeout, until NCCL has finished. Afterwards only {@link #close()} remains. Does nothing when
     * already finalized.
     *
     * @throws NcclException when NCCL fails or the time runs out; the communicator is then aborted
     */
    public void finish() {
        if (finalized && endReason == null) {
            return;
        }
        requireUsable();
        String call = "ncclCommFinalize(" + this + ")";
        settlePending();
        int rc;
        synchronized (this) {
            beforeCall();
            rc = nccl_h.ncclCommFinalize(comm);
        }
        if (rc != nccl_h.ncclSuccess() && rc != nccl_h.ncclInProgress()) {
            throw failAndAbort(NcclCalls.error(call, rc, comm));
        }
        waitUntilReady(call, timeout);
        finalized = true;
    }

    /**
     * Aborts the communicator ({@code ncclCommAbort}): stops its operations, which do not complete, and releases
     * it. Any thread may call this; it does nothing when the communicator is already released.
     */
    public void abort() {
        closeCalled.set(true);
        release(true, "aborted by abort()");
    }

    /**
     * Releases the communicator, once: when healthy, finalizes it (if {@link #finish()} was not called) and
     * destroys it ({@code ncclCommDestroy}); when NCCL reports an error, aborts it ({@code ncclCommAbort}) and
     * throws that error. Closing again, or after {@link #abort()}, does nothing.
     */
    @Override
    public void close() {
        if (!closeCalled.compareAndSet(false, true) || endReason != null) {
            return;
        }
        if (!context.isOpen()) {
            release(true, "aborted by close(): its context was closed first");
            return;
        }
        if (!finalized) {
            finish(); // aborts and throws on error or timeout
        }
        try (Arena arena = Arena.ofConfined()) {
            int s = queryState(arena.allocate(ValueLayout.JAVA_INT));
            if (s != nccl_h.ncclSuccess() && s != nccl_h.ncclInProgress()) {
                throw failAndAbort(NcclCalls.error("ncclCommGetAsyncError(" + this + ") before ncclCommDestroy", s,
                        comm));
            }
        }
        release(false, "closed");
    }

    @Override
    public String toString() {
        return "NCCL communicator rank " + rank + " of " + size + " on device " + context.device().ordinal();
    }

    // ---- waiting ----

    /** Polls until the communicator leaves ncclInProgress; aborts and throws on error or timeout. */
    private void waitUntilReady(String call, Duration limitDuration) {
        long limit = nanos(limitDuration);
        long start = System.nanoTime();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(ValueLayout.JAVA_INT);
            for (long polls = 0; ; polls++) {
                int s = queryState(state);
                if (s == nccl_h.ncclSuccess()) {
                    pending = false;
                    return;
                }
                if (s != nccl_h.ncclInProgress()) {
                    throw failAndAbort(NcclCalls.error(call + ": asynchronous error", s, comm));
                }
                if (System.nanoTime() - start >= limit) {
                    throw failAndAbort(NcclCalls.timeout(call + " did not finish within " + limitDuration.toMillis()
                            + " ms; the communicator was aborted", comm));
                }
                pause(polls);
            }
        }
    }

    /** {@code ncclCommGetAsyncError}; a failure of the query itself aborts and throws. */
    private int queryState(MemorySegment state) {
        int rc;
        synchronized (this) {
            requireNotReleased();
            rc = nccl_h.ncclCommGetAsyncError(comm, state);
        }
        if (rc != nccl_h.ncclSuccess()) {
            throw failAndAbort(NcclCalls.error("ncclCommGetAsyncError(" + this + ")", rc, comm));
        }
        return state.get(ValueLayout.JAVA_INT, 0);
    }

    private boolean streamIdle(CudaStream stream) {
        context.setCurrent();
        int rc = cuda_h.cuStreamQuery(stream.rawHandle());
        if (rc == cuda_h.CUDA_ERROR_NOT_READY()) {
            return false;
        }
        CudaCalls.check(rc, "cuStreamQuery(" + stream + ")");
        return true;
    }

    private static void pause(long polls) {
        if (polls < SPIN_POLLS) {
            Thread.onSpinWait();
        } else {
            LockSupport.parkNanos(PARK_NANOS);
        }
    }

    // ---- calls ----

    /** Waits until an operation that returned ncclInProgress has been issued (outside the lock: abort stays possible).
     * */
    private void settlePending() {
        if (pending) {
            waitUntilReady("pending operation of " + this, timeout);
        }
    }

    /** Under the lock: refuses a released communicator and makes the context current. */
    private void beforeCall() {
        requireNotReleased();
        context.setCurrent();
    }

    /** Issues one operation: waits out a pending one, makes the call under the lock, then records its result. */
    private void enqueue(IntSupplier call, Supplier<String> description) {
        settlePending();
        int rc;
        synchronized (this) {
            beforeCall();
            rc = call.getAsInt();
        }
        afterEnqueue(rc, description);
    }

    private void afterEnqueue(int rc, Supplier<String> call) {
        if (rc == nccl_h.ncclInProgress()) {
            pending = true;
        } else if (rc != nccl_h.ncclSuccess()) {
            throw NcclCalls.error(call.get(), rc, comm);
        }
        Group group = GROUP.get();
        if (group.depth > 0) {
            group.members.add(this);
        }
    }

    /** Records why the communicator ends, aborts it, and returns {@code e} (with any abort failure suppressed). */
    private NcclException failAndAbort(NcclException e) {
        try {
            release(true, "aborted after: " + e.getMessage());
        } catch (NcclException abortFailure) {
            e.addSuppressed(abortFailure);
        }
        return e;
    }

    /** {@code ncclCommAbort} or {@code ncclCommDestroy}, exactly once over the life of the communicator. */
    private void release(boolean abort, String reason) {
        int rc;
        synchronized (this) {
            if (released) {
                return;
            }
            released = true;
            endReason = reason;
            pending = false;
            if (context.isOpen()) {
                context.setCurrent();
            }
            rc = abort ? nccl_h.ncclCommAbort(comm) : nccl_h.ncclCommDestroy(comm);
        }
        // ncclInProgress: NCCL finishes the teardown in the background; the handle is gone either way.
        if (rc != nccl_h.ncclSuccess() && rc != nccl_h.ncclInProgress()) {
            throw NcclCalls.error((abort ? "ncclCommAbort(" : "ncclCommDestroy(") + this + ")", rc, MemorySegment.NULL);
        }
    }

    // ---- validation ----

    private void requireUsable() {
        String reason = endReason;
        if (reason != null) {
            throw new IllegalStateException(this + " is no longer usable: " + reason);
        }
        if (finalized) {
            throw new IllegalStateException(this + " is finalized; only close() remains");
        }
        context.requireOpen();
    }

    private void requireNotReleased() {
        if (released) {
            throw new IllegalStateException(this + " is no longer usable: " + endReason);
        }
    }

    private void requireRank(int r, String what) {
        if (r < 0 || r >= size) {
            throw new IllegalArgumentException(what + " " + r + " is not a rank of " + this + " (0.." + (size - 1)
                    + ")");
        }
    }

    private static void requireTypeAndOp(DataType type, ReduceOp op) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(op, "op");
    }

    /** {@code count * blocks * type.byteSize()} bytes, for a count that must be >= 0 and not overflow. */
    private static long byteCount(long count, int blocks, DataType type, String what) {
        if (count < 0) {
            throw new IllegalArgumentException(what + " must be >= 0: " + count);
        }
        try {
            return Math.multiplyExact(Math.multiplyExact(count, (long) blocks), (long) type.byteSize());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(what + " " + count + " of " + type.canonicalName()
                    + " overflows a byte size");
        }
    }

    private void requireBuffer(DeviceMemory buffer, long bytes, String role) {
        Objects.requireNonNull(buffer, role);
        if (!buffer.isOpen()) {
            throw new IllegalStateException(role + " buffer " + buffer + " is closed");
        }
        if (buffer.context() != context) {
            throw new IllegalArgumentException(role + " buffer " + buffer + " belongs to " + buffer.context()
                    + ", not to the context of " + this);
        }
        if (buffer.byteSize() < bytes) {
            throw new IllegalArgumentException(role + " buffer " + buffer + " has " + buffer.byteSize()
                    + " bytes; the operation needs " + bytes);
        }
    }

    private void requireStream(CudaStream stream) {
        Objects.requireNonNull(stream, "stream");
        stream.requireOpen();
        if (stream.context() != context) {
            throw new IllegalArgumentException(stream + " belongs to " + stream.context() + ", not to the context of "
                    + this);
        }
    }

    private static void requirePositive(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive: " + timeout);
        }
    }

    private static long nanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }

    private static MemorySegment pointer(DeviceMemory m) {
        return MemorySegment.ofAddress(m.address());
    }

    private static MemorySegment pointerOrNull(DeviceMemory m) {
        return m == null ? MemorySegment.NULL : pointer(m);
    }

    /** The calling thread's open groups and the communicators used in them. */
    private static final class Group {
        int depth;
        final Set<NcclCommunicator> members = new LinkedHashSet<>();
    }
}
