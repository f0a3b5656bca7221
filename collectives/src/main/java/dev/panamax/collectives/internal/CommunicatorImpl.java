package dev.panamax.collectives.internal;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The communicator over a set of {@link Link}s, one per peer. Collectives run on the calling
 * thread (asynchronous ones on a per-communicator worker, in issue order) under one lock, so the
 * ranks see the same order of operations. Arguments are checked before any message moves.
 */
public final class CommunicatorImpl implements Communicator {
    private final int rank;
    private final int size;
    private final Link[] links;
    private final long timeoutNanos;
    private final BufferAllocator allocator;
    private final Runnable onClose;
    private final Waiter waiter;
    private final Ring ring;
    private final ReentrantLock lock = new ReentrantLock();
    private ExecutorService worker;
    private CompletableFuture<Void> lastAsync = CompletableFuture.completedFuture(null);
    private volatile boolean closed;
    private volatile Throwable failure;

    /**
     * @param localRanks how many ranks of this job run on this host (to tell whether the CPUs are
     *                   oversubscribed, which changes how waits idle)
     */
    public CommunicatorImpl(int rank, int size, Link[] links, long timeoutNanos, BufferAllocator allocator, int localRanks,
                            Runnable onClose) {
        this.rank = rank;
        this.size = size;
        this.links = links;
        this.timeoutNanos = timeoutNanos;
        this.allocator = allocator;
        this.onClose = onClose;
        this.waiter = new Waiter(rank, timeoutNanos, localRanks > Runtime.getRuntime().availableProcessors());
        this.ring = new Ring(rank, size, links, waiter, new Scratch(allocator));
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
    public String transportTo(int peer) {
        checkPeerIndex(peer, "peer");
        return peer == rank ? "self" : links[peer].kind();
    }

    @Override
    public long timeoutNanos() {
        return timeoutNanos;
    }

    // ---- blocking collectives -------------------------------------------------------------

    @Override
    public void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        checkAllReduce(send, recv, count, type, op);
        run(() -> ring.allReduce(send, recv, count, type, op));
    }

    @Override
    public void reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        checkReduceScatter(send, recv, recvCount, type, op);
        run(() -> ring.reduceScatter(send, recv, recvCount, type, op));
    }

    @Override
    public void allGather(MemorySegment send, MemorySegment recv, long sendCount, DataType type) {
        checkAllGather(send, recv, sendCount, type);
        run(() -> ring.allGather(send, recv, sendCount, type));
    }

    @Override
    public void broadcast(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        checkBroadcast(send, recv, count, type, root);
        run(() -> ring.broadcast(send, recv, count, type, root));
    }

    @Override
    public void reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        checkReduce(send, recv, count, type, op, root);
        run(() -> ring.reduce(send, recv, count, type, op, root));
    }

    @Override
    public void barrier() {
        run(ring::barrier);
    }

    // ---- asynchronous collectives: same checks, then the caller's buffers are handed to the worker

    @Override
    public CompletableFuture<Void> allReduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        checkAllReduce(send, recv, count, type, op);
        MemorySegment s = Segments.unscoped(send), r = Segments.unscoped(recv);
        return async(() -> ring.allReduce(s, r, count, type, op));
    }

    @Override
    public CompletableFuture<Void> reduceScatterAsync(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        checkReduceScatter(send, recv, recvCount, type, op);
        MemorySegment s = Segments.unscoped(send), r = Segments.unscoped(recv);
        return async(() -> ring.reduceScatter(s, r, recvCount, type, op));
    }

    @Override
    public CompletableFuture<Void> allGatherAsync(MemorySegment send, MemorySegment recv, long sendCount, DataType type) {
        checkAllGather(send, recv, sendCount, type);
        MemorySegment s = Segments.unscoped(send), r = Segments.unscoped(recv);
        return async(() -> ring.allGather(s, r, sendCount, type));
    }

    @Override
    public CompletableFuture<Void> broadcastAsync(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        checkBroadcast(send, recv, count, type, root);
        MemorySegment s = Segments.unscoped(send), r = Segments.unscoped(recv);
        return async(() -> ring.broadcast(s, r, count, type, root));
    }

    @Override
    public CompletableFuture<Void> reduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        checkReduce(send, recv, count, type, op, root);
        MemorySegment s = Segments.unscoped(send), r = Segments.unscoped(recv);
        return async(() -> ring.reduce(s, r, count, type, op, root));
    }

    @Override
    public CompletableFuture<Void> barrierAsync() {
        return async(ring::barrier);
    }

    // ---- argument checks, before any rank blocks ------------------------------------------

    private void checkAllReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        Args.reduction(type, op);
        Args.buffer("send", send, count, type, false);
        Args.buffer("recv", recv, count, type, true);
        Args.sameOrDisjoint(send, recv, "allReduce");
    }

    private void checkReduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        Args.reduction(type, op);
        Args.buffer("send", send, Args.times(recvCount, size, "recvCount * size"), type, false);
        Args.buffer("recv", recv, recvCount, type, true);
        Args.inPlaceBlock(send, recv, recvCount * type.byteSize(), rank, "reduceScatter", "recv", "send");
    }

    private void checkAllGather(MemorySegment send, MemorySegment recv, long sendCount, DataType type) {
        Objects.requireNonNull(type, "type");
        Args.buffer("send", send, sendCount, type, false);
        Args.buffer("recv", recv, Args.times(sendCount, size, "sendCount * size"), type, true);
        Args.inPlaceBlock(recv, send, sendCount * type.byteSize(), rank, "allGather", "send", "recv");
    }

    private void checkBroadcast(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        Objects.requireNonNull(type, "type");
        checkPeerIndex(root, "root");
        if (rank == root) {
            Args.buffer("send", send, count, type, false);
            Args.sameOrDisjoint(send, recv, "broadcast");
        }
        Args.buffer("recv", recv, count, type, true);
    }

    private void checkReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        Args.reduction(type, op);
        checkPeerIndex(root, "root");
        Args.buffer("send", send, count, type, false);
        if (rank == root) {
            Args.buffer("recv", recv, count, type, true);
            Args.sameOrDisjoint(send, recv, "reduce");
        }
    }

    // ---- memory ---------------------------------------------------------------------------

    @Override
    public MemorySegment allocate(long byteSize) {
        ensureOpen();
        if (byteSize < 0) {
            throw new IllegalArgumentException("byteSize must be >= 0: " + byteSize);
        }
        return allocator.allocate(byteSize);
    }

    @Override
    public void free(MemorySegment buffer) {
        Objects.requireNonNull(buffer, "buffer");
        allocator.free(buffer);
    }

    // ---- lifecycle ------------------------------------------------------------------------

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        waiter.abort("the communicator was closed");
        ExecutorService w;
        synchronized (this) {
            w = worker;
        }
        if (w != null) {
            w.shutdownNow();
        }
        lock.lock();
        try {
            closeLinks();
            allocator.close();
        } finally {
            lock.unlock();
            onClose.run();
        }
    }

    /**
     * Runs a collective; when it fails, the communicator is broken (messages may be half sent), so
     * its links are closed at once: peers still waiting on this rank fail too instead of timing out.
     */
    private void execute(Runnable collective) {
        try {
            collective.run();
        } catch (RuntimeException | Error e) {
            failure = e;
            closeLinks();
            throw e;
        }
    }

    /** Closes every link (idempotent), which also tells the peers this rank is gone. */
    private void closeLinks() {
        for (Link l : links) {
            if (l != null) {
                try {
                    l.close();
                } catch (RuntimeException ignored) {
                    // best effort: the peer may be gone already
                }
            }
        }
    }

    private void run(Runnable collective) {
        ensureOpen();
        CompletableFuture<Void> pending;
        synchronized (this) {
            pending = lastAsync;
        }
        if (!pending.isDone()) {
            // Keep issue order: earlier async calls go first on every rank.
            pending.exceptionally(t -> null).join();
        }
        lock.lock();
        try {
            ensureOpen();
            execute(collective);
        } finally {
            lock.unlock();
        }
    }

    private CompletableFuture<Void> async(Runnable collective) {
        ensureOpen();
        synchronized (this) {
            if (worker == null) {
                worker = Executors.newSingleThreadExecutor(r -> {
                    Thread t = new Thread(r, "panamax-rank-" + rank + "-async");
                    t.setDaemon(true);
                    return t;
                });
            }
            try {
                CompletableFuture<Void> f = CompletableFuture.runAsync(() -> run0(collective), worker);
                lastAsync = f;
                return f;
            } catch (RejectedExecutionException e) {
                throw new CollectiveException("rank " + rank + ": the communicator is closed");
            }
        }
    }

    private void run0(Runnable collective) {
        lock.lock();
        try {
            ensureOpen();
            execute(collective);
        } finally {
            lock.unlock();
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("rank " + rank + ": the communicator is closed");
        }
        Throwable f = failure;
        if (f != null) {
            throw new IllegalStateException("rank " + rank + ": the communicator is unusable after an earlier failure: " + f.getMessage(), f);
        }
    }

    private void checkPeerIndex(int r, String what) {
        if (r < 0 || r >= size) {
            throw new IllegalArgumentException(what + " " + r + " is not a rank of this communicator (size " + size + ")");
        }
    }
}
