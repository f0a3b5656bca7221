package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.algorithms.Algorithm;
import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.internal.observe.CommunicatorMBean;
import dev.panamax.collectives.internal.transport.BufferAllocator;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.Segments;
import dev.panamax.collectives.plan.Candidate;
import dev.panamax.collectives.plan.Planner;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.Simulator;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The communicator over a set of {@link Link}s, one per peer. Each call builds (or finds in a
 * small cache) the {@link Schedule} of the selected algorithm and runs it with the
 * {@link ScheduleExecutor}. Collectives run on the calling thread (asynchronous ones on a
 * per-communicator worker, in issue order) under one lock shared with the communicators split
 * from this one, so the ranks see the same order of operations on the shared links. Arguments
 * are checked, and the schedule is built, before any message moves.
 */
public final class CommunicatorImpl implements Communicator {
    private final int rank;
    private final int size;
    private final Link[] links;
    private final long timeoutNanos;
    private final BufferAllocator allocator;
    private final Runnable onClose;
    private final ProgressLoop waiter;
    private final ScratchBuffers scratch;
    private final ScheduleExecutor executor;
    private final Family family;
    private final CommunicatorImpl parent;
    private final int localRanks;
    private final List<CommunicatorImpl> children = new ArrayList<>();
    private final Map<Collective, String> algorithms = new EnumMap<>(Collective.class);
    private final Map<PlanKey, Schedule> plans = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<PlanKey, Schedule> eldest) {
            return size() > 256;
        }
    };
    /** Schedules for {@link #allReduceConcurrently}, which needs stage-aligned ones; guarded by {@link #plans}. */
    private final Map<PlanKey, Schedule> concurrentPlans = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<PlanKey, Schedule> eldest) {
            return size() > 256;
        }
    };
    private volatile Topology topology;
    private volatile CallValidator validator;
    private boolean deterministic;
    private ExecutorService worker;
    private CompletableFuture<Void> lastAsync = CompletableFuture.completedFuture(null);
    private volatile boolean closed;
    /** Unique in this JVM: names the JMX bean and tags the JFR events. */
    private final long id;
    private final CommunicatorMBean mbean;

    /** What a communicator shares with those split from it: the lock over the links and the first failure. */
    private static final class Family {
        final ReentrantLock lock = new ReentrantLock();
        volatile Throwable failure;
        /** Set once by {@link #abort()} on any member. */
        volatile boolean aborted;
        /** An abort's release of the family, left to whichever thread next holds {@link #lock}. */
        volatile boolean releasePending;
    }

    private record PlanKey(Collective collective, long count, int elementBytes, int root) {
    }

    /**
     * @param localRanks how many ranks of this job run on this host (to tell whether the CPUs are
     *                   oversubscribed, which changes how waits idle)
     */
    public CommunicatorImpl(int rank, int size, Link[] links, long timeoutNanos, BufferAllocator allocator, int localRanks,
                            Topology topology, Runnable onClose) {
        this(null, new Family(), rank, size, links, timeoutNanos, allocator, localRanks, topology, onClose);
    }

    private CommunicatorImpl(CommunicatorImpl parent, Family family, int rank, int size, Link[] links, long timeoutNanos,
                             BufferAllocator allocator, int localRanks, Topology topology, Runnable onClose) {
        this.parent = parent;
        this.family = family;
        this.rank = rank;
        this.size = size;
        this.links = links;
        this.timeoutNanos = timeoutNanos;
        this.allocator = allocator;
        this.localRanks = localRanks;
        this.onClose = onClose;
        this.waiter = new ProgressLoop(rank, timeoutNanos, localRanks > Runtime.getRuntime().availableProcessors(), links);
        this.scratch = new ScratchBuffers(allocator);
        this.id = CommunicatorMBean.nextId();
        this.executor = new ScheduleExecutor(links, waiter, scratch, id);
        this.topology = checkTopology(topology == null ? Topology.flat(size) : topology);
        for (Collective c : Collective.values()) {
            algorithms.put(c, Algorithms.AUTO);
        }
        this.mbean = CommunicatorMBean.register(this, waiter, id, () -> closed);
    }

    /**
     * Has every call's whole send, receive and scratch buffers handed to {@code registrar} before
     * its schedule runs (the verbs transport registers them, so the slices its links see are
     * covered by one registration). Set once, right after construction.
     */
    public void registerBuffersWith(ScheduleExecutor.BufferRegistrar registrar) {
        executor.registrar = registrar;
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
        Schedule s = plan(Collective.ALL_REDUCE, count, type, 0);
        run(() -> runSchedule(s, send, recv, type, op));
    }

    @Override
    public void allReduceConcurrently(List<MemorySegment> buffers, long[] counts, DataType type, ReduceOp op) {
        ArgumentChecks.reduction(type, op);
        Objects.requireNonNull(buffers, "buffers");
        Objects.requireNonNull(counts, "counts");
        if (buffers.size() != counts.length) {
            throw new IllegalArgumentException("allReduceConcurrently: " + buffers.size() + " buffers but " + counts.length + " counts");
        }
        int k = counts.length;
        MemorySegment[] data = new MemorySegment[k];
        for (int j = 0; j < k; j++) {
            ArgumentChecks.buffer("buffer " + j, buffers.get(j), counts[j], type, true);
            data[j] = buffers.get(j).asSlice(0, counts[j] * type.byteSize());
            for (int i = 0; i < j; i++) {
                if (ArgumentChecks.overlaps(data[i], data[j])) {
                    throw new IllegalArgumentException("allReduceConcurrently: buffers " + i + " and " + j + " overlap");
                }
            }
        }
        Schedule[] schedules = new Schedule[k];
        for (int j = 0; j < k; j++) {
            schedules[j] = concurrentPlan(counts[j], type);
        }
        run(() -> {
            CallValidator v = validator;
            if (v != null) {
                for (Schedule s : schedules) {
                    v.check(s, type, op);
                }
            }
            executor.runConcurrently(schedules, data, type, op);
        });
    }

    @Override
    public void reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        checkReduceScatter(send, recv, recvCount, type, op);
        Schedule s = plan(Collective.REDUCE_SCATTER, recvCount, type, 0);
        run(() -> runSchedule(s, send, recv, type, op));
    }

    @Override
    public void allGather(MemorySegment send, MemorySegment recv, long sendCount, DataType type) {
        checkAllGather(send, recv, sendCount, type);
        Schedule s = plan(Collective.ALL_GATHER, sendCount, type, 0);
        run(() -> runSchedule(s, send, recv, type, null));
    }

    @Override
    public void broadcast(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        checkBroadcast(send, recv, count, type, root);
        Schedule s = plan(Collective.BROADCAST, count, type, root);
        run(() -> runSchedule(s, send, recv, type, null));
    }

    @Override
    public void reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        checkReduce(send, recv, count, type, op, root);
        Schedule s = plan(Collective.REDUCE, count, type, root);
        run(() -> runSchedule(s, send, recv, type, op));
    }

    @Override
    public void allToAll(MemorySegment send, MemorySegment recv, long count, DataType type) {
        checkAllToAll(send, recv, count, type);
        Schedule s = plan(Collective.ALL_TO_ALL, count, type, 0);
        run(() -> runSchedule(s, send, recv, type, null));
    }

    @Override
    public void barrier() {
        Schedule s = plan(Collective.BARRIER, 0, DataType.UINT8, 0);
        run(() -> runSchedule(s, MemorySegment.NULL, MemorySegment.NULL, DataType.UINT8, null));
    }

    @Override
    public void send(MemorySegment buffer, long count, DataType type, int peer) {
        checkPointToPoint(buffer, count, type, peer, false);
        MemorySegment data = count == 0 ? MemorySegment.NULL : buffer.asSlice(0, count * type.byteSize());
        run(() -> executor.pointToPoint(true, rank, size, peer, data, count, type));
    }

    @Override
    public void recv(MemorySegment buffer, long count, DataType type, int peer) {
        checkPointToPoint(buffer, count, type, peer, true);
        MemorySegment data = count == 0 ? MemorySegment.NULL : buffer.asSlice(0, count * type.byteSize());
        run(() -> executor.pointToPoint(false, rank, size, peer, data, count, type));
    }

    // ---- asynchronous collectives: same checks, then the caller's buffers are handed to the worker

    @Override
    public CompletableFuture<Void> allReduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        checkAllReduce(send, recv, count, type, op);
        return async(plan(Collective.ALL_REDUCE, count, type, 0), send, recv, type, op);
    }

    @Override
    public CompletableFuture<Void> reduceScatterAsync(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        checkReduceScatter(send, recv, recvCount, type, op);
        return async(plan(Collective.REDUCE_SCATTER, recvCount, type, 0), send, recv, type, op);
    }

    @Override
    public CompletableFuture<Void> allGatherAsync(MemorySegment send, MemorySegment recv, long sendCount, DataType type) {
        checkAllGather(send, recv, sendCount, type);
        return async(plan(Collective.ALL_GATHER, sendCount, type, 0), send, recv, type, null);
    }

    @Override
    public CompletableFuture<Void> broadcastAsync(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        checkBroadcast(send, recv, count, type, root);
        return async(plan(Collective.BROADCAST, count, type, root), send, recv, type, null);
    }

    @Override
    public CompletableFuture<Void> reduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        checkReduce(send, recv, count, type, op, root);
        return async(plan(Collective.REDUCE, count, type, root), send, recv, type, op);
    }

    @Override
    public CompletableFuture<Void> allToAllAsync(MemorySegment send, MemorySegment recv, long count, DataType type) {
        checkAllToAll(send, recv, count, type);
        return async(plan(Collective.ALL_TO_ALL, count, type, 0), send, recv, type, null);
    }

    @Override
    public CompletableFuture<Void> barrierAsync() {
        return async(plan(Collective.BARRIER, 0, DataType.UINT8, 0), MemorySegment.NULL, MemorySegment.NULL, DataType.UINT8, null);
    }

    private CompletableFuture<Void> async(Schedule s, MemorySegment send, MemorySegment recv, DataType type, ReduceOp op) {
        MemorySegment sd = send == null ? null : Segments.unscoped(send);
        MemorySegment rv = recv == null ? null : Segments.unscoped(recv);
        return async(() -> runSchedule(s, sd, rv, type, op));
    }

    /** Runs a user collective's schedule, after the cross-rank check of the call when validation is on. */
    private void runSchedule(Schedule s, MemorySegment send, MemorySegment recv, DataType type, ReduceOp op) {
        CallValidator v = validator;
        if (v != null) {
            v.check(s, type, op);
        }
        executor.run(s, send, recv, type, op);
    }

    // ---- validation and determinism -------------------------------------------------------

    @Override
    public void setCallValidation(boolean on) {
        family.lock.lock();
        try {
            if (on && validator == null) {
                validator = new CallValidator(rank, size, executor, allocator);
            } else if (!on && validator != null) {
                validator.close();
                validator = null;
            }
        } finally {
            family.lock.unlock();
        }
    }

    @Override
    public boolean callValidation() {
        return validator != null;
    }

    @Override
    public void setDeterministic(boolean on) {
        synchronized (plans) {
            deterministic = on;
            plans.clear();
            concurrentPlans.clear();
        }
    }

    @Override
    public boolean deterministic() {
        return deterministic;
    }

    // ---- algorithms, topology, schedules --------------------------------------------------

    @Override
    public Topology topology() {
        return topology;
    }

    @Override
    public void setTopology(Topology topology) {
        Topology t = checkTopology(Objects.requireNonNull(topology, "topology"));
        synchronized (plans) {
            this.topology = t;
            plans.clear();
            concurrentPlans.clear();
        }
    }

    private Topology checkTopology(Topology t) {
        if (t.size() != size) {
            throw new IllegalArgumentException("topology " + t + " has " + t.size() + " ranks, this communicator " + size);
        }
        return t;
    }

    @Override
    public void setAlgorithm(Collective collective, String algorithm) {
        Objects.requireNonNull(collective, "collective");
        Objects.requireNonNull(algorithm, "algorithm");
        if (!algorithm.equals(Algorithms.AUTO)) {
            Algorithm a = Algorithms.get(algorithm);
            if (!Algorithms.namesFor(collective).contains(a.name())) {
                throw new IllegalArgumentException("algorithm '" + algorithm + "' has no " + collective.label() + "; for "
                        + collective.label() + ": " + String.join(", ", Algorithms.namesFor(collective)) + ", auto");
            }
        }
        synchronized (plans) {
            algorithms.put(collective, algorithm);
            plans.clear();
            concurrentPlans.clear();
        }
    }

    @Override
    public String algorithm(Collective collective) {
        synchronized (plans) {
            return algorithms.get(collective);
        }
    }

    @Override
    public Schedule schedule(Collective collective, long count, DataType type, int root) {
        Objects.requireNonNull(type, "type");
        if (collective == Collective.BROADCAST || collective == Collective.REDUCE) {
            checkPeerIndex(root, "root");
        }
        return plan(collective, collective == Collective.BARRIER ? 0 : count, collective == Collective.BARRIER ? DataType.UINT8 : type,
                collective == Collective.BROADCAST || collective == Collective.REDUCE ? root : 0);
    }

    /** The schedule for a call, from the cache or built now (before any message moves, so a bad choice fails cleanly). */
    private Schedule plan(Collective collective, long count, DataType type, int root) {
        PlanKey key = new PlanKey(collective, count, type.byteSize(), root);
        synchronized (plans) {
            Schedule s = plans.get(key);
            if (s == null) {
                Choice c = choose(collective, count, type, root);
                s = c.algorithm().build(c.problem());
                plans.put(key, s);
            }
            return s;
        }
    }

    /** The algorithm for a call and the problem to build it for (with the planner's topology for {@code auto}). */
    private record Choice(Algorithm algorithm, Problem problem) {
    }

    private Choice choose(Collective collective, long count, DataType type, int root) {
        Problem p = new Problem(collective, rank, size, count, type.byteSize(), root, topology);
        String name = algorithms.get(collective);
        Algorithm a;
        if (name.equals(Algorithms.AUTO)) {
            // Deterministic: the choice may depend on the call and the rank count only, not on a
            // detected or calibrated topology.
            Candidate c = Planner.choose(deterministic ? new Problem(collective, rank, size, count, type.byteSize(), root,
                    Topology.flat(size)) : p);
            a = Algorithms.get(c.algorithm());
            p = new Problem(collective, rank, size, count, type.byteSize(), root, c.topology());
        } else {
            a = Algorithms.get(name);
        }
        String why = a.unsupported(p);
        if (why != null) {
            throw new IllegalArgumentException(collective.label() + " with algorithm '" + a.name() + "' on " + size + " ranks: " + why);
        }
        return new Choice(a, p);
    }

    /**
     * The schedule of one all-reduce of {@link #allReduceConcurrently}: the one a plain call would
     * run when that algorithm's schedules are stage-aligned (checked once per size on every rank's
     * schedule, so every rank decides alike), else the ring's, which always are.
     */
    private Schedule concurrentPlan(long count, DataType type) {
        PlanKey key = new PlanKey(Collective.ALL_REDUCE, count, type.byteSize(), 0);
        synchronized (plans) {
            Schedule s = concurrentPlans.get(key);
            if (s == null) {
                Choice c = choose(Collective.ALL_REDUCE, count, type, 0);
                List<Schedule> all = new ArrayList<>(size);
                for (int r = 0; r < size; r++) {
                    all.add(c.algorithm().build(c.problem().atRank(r)));
                }
                s = Simulator.stageAligned(all) ? all.get(rank)
                        : Algorithms.get("ring").build(new Problem(Collective.ALL_REDUCE, rank, size, count, type.byteSize(), 0, topology));
                concurrentPlans.put(key, s);
            }
            return s;
        }
    }

    // ---- split ----------------------------------------------------------------------------

    @Override
    public Communicator split(int color, int key) {
        if (color < 0 && color != UNDEFINED) {
            throw new IllegalArgumentException("color must be >= 0 or UNDEFINED (-1): " + color);
        }
        MemorySegment all = allocate(8L * size);
        int[] colors = new int[size];
        int[] keys = new int[size];
        try {
            MemorySegment mine = allocate(8);
            try {
                mine.set(java.lang.foreign.ValueLayout.JAVA_INT, 0, color);
                mine.set(java.lang.foreign.ValueLayout.JAVA_INT, 4, key);
                // The exchange runs the ring whatever algorithm the user selected for all-gather.
                Schedule ring = Algorithms.get("ring").build(new Problem(Collective.ALL_GATHER, rank, size, 2, 4, 0, topology));
                run(() -> executor.run(ring, mine, all, DataType.INT32, null));
            } finally {
                free(mine);
            }
            for (int q = 0; q < size; q++) {
                colors[q] = all.get(java.lang.foreign.ValueLayout.JAVA_INT, 8L * q);
                keys[q] = all.get(java.lang.foreign.ValueLayout.JAVA_INT, 8L * q + 4);
            }
        } finally {
            free(all);
        }
        if (color == UNDEFINED) {
            return null;
        }
        List<Integer> members = new ArrayList<>();
        for (int q = 0; q < size; q++) {
            if (colors[q] == color) {
                members.add(q);
            }
        }
        members.sort((x, y) -> keys[x] != keys[y] ? Integer.compare(keys[x], keys[y]) : Integer.compare(x, y));
        int m = members.size();
        Link[] sub = new Link[m];
        int subRank = -1;
        for (int i = 0; i < m; i++) {
            int q = members.get(i);
            if (q == rank) {
                subRank = i;
            } else {
                sub[i] = links[q];
            }
        }
        SubAllocator subAllocator = new SubAllocator(allocator);
        CommunicatorImpl child = new CommunicatorImpl(this, family, subRank, m, sub, timeoutNanos, subAllocator,
                Math.min(localRanks, m), Topology.flat(m), subAllocator::close);
        child.executor.registrar = executor.registrar;
        synchronized (children) {
            children.add(child);
        }
        return child;
    }

    /** A sub-communicator's buffers come from the parent's allocator; closing it frees only its own. */
    private static final class SubAllocator implements BufferAllocator {
        private final BufferAllocator parent;
        private final java.util.Set<MemorySegment> own = new java.util.HashSet<>();
        private boolean closed;

        SubAllocator(BufferAllocator parent) {
            this.parent = parent;
        }

        @Override
        public synchronized MemorySegment allocate(long byteSize) {
            if (closed) {
                throw new IllegalStateException("the communicator is closed");
            }
            MemorySegment s = parent.allocate(byteSize);
            own.add(s);
            return s;
        }

        @Override
        public synchronized void free(MemorySegment buffer) {
            MemorySegment match = null;
            for (MemorySegment s : own) {
                if (s.address() == buffer.address()) {
                    match = s;
                    break;
                }
            }
            if (match == null) {
                throw new IllegalArgumentException("segment at 0x" + Long.toHexString(buffer.address())
                        + " was not allocated by this communicator (or was freed already)");
            }
            own.remove(match);
            parent.free(match);
        }

        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closed = true;
            for (MemorySegment s : own) {
                try {
                    parent.free(s);
                } catch (RuntimeException ignored) {
                    // the parent was closed first, which freed it
                }
            }
            own.clear();
        }
    }

    // ---- argument checks, before any rank blocks ------------------------------------------

    private void checkAllReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        ArgumentChecks.reduction(type, op);
        ArgumentChecks.buffer("send", send, count, type, false);
        ArgumentChecks.buffer("recv", recv, count, type, true);
        ArgumentChecks.sameOrDisjoint(send, recv, "allReduce");
    }

    private void checkReduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        ArgumentChecks.reduction(type, op);
        ArgumentChecks.buffer("send", send, ArgumentChecks.times(recvCount, size, "recvCount * size"), type, false);
        ArgumentChecks.buffer("recv", recv, recvCount, type, true);
        ArgumentChecks.inPlaceBlock(send, recv, recvCount * type.byteSize(), rank, "reduceScatter", "recv", "send");
    }

    private void checkAllGather(MemorySegment send, MemorySegment recv, long sendCount, DataType type) {
        Objects.requireNonNull(type, "type");
        ArgumentChecks.buffer("send", send, sendCount, type, false);
        ArgumentChecks.buffer("recv", recv, ArgumentChecks.times(sendCount, size, "sendCount * size"), type, true);
        ArgumentChecks.inPlaceBlock(recv, send, sendCount * type.byteSize(), rank, "allGather", "send", "recv");
    }

    private void checkBroadcast(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        Objects.requireNonNull(type, "type");
        checkPeerIndex(root, "root");
        if (rank == root) {
            ArgumentChecks.buffer("send", send, count, type, false);
            ArgumentChecks.sameOrDisjoint(send, recv, "broadcast");
        }
        ArgumentChecks.buffer("recv", recv, count, type, true);
    }

    private void checkReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        ArgumentChecks.reduction(type, op);
        checkPeerIndex(root, "root");
        ArgumentChecks.buffer("send", send, count, type, false);
        if (rank == root) {
            ArgumentChecks.buffer("recv", recv, count, type, true);
            ArgumentChecks.sameOrDisjoint(send, recv, "reduce");
        }
    }

    private void checkAllToAll(MemorySegment send, MemorySegment recv, long count, DataType type) {
        Objects.requireNonNull(type, "type");
        long total = ArgumentChecks.times(count, size, "count * size");
        ArgumentChecks.buffer("send", send, total, type, false);
        ArgumentChecks.buffer("recv", recv, total, type, true);
        if (total > 0 && ArgumentChecks.overlaps(send, recv)) {
            throw new IllegalArgumentException("allToAll: send and recv overlap; all-to-all has no in-place form");
        }
    }

    private void checkPointToPoint(MemorySegment buffer, long count, DataType type, int peer, boolean writable) {
        Objects.requireNonNull(type, "type");
        checkPeerIndex(peer, "peer");
        if (peer == rank) {
            throw new IllegalArgumentException((writable ? "recv from" : "send to") + " rank " + rank + " itself");
        }
        ArgumentChecks.buffer("buffer", buffer, count, type, writable);
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
        List<CommunicatorImpl> kids;
        synchronized (children) {
            kids = new ArrayList<>(children);
        }
        for (CommunicatorImpl c : kids) {
            c.close();
        }
        closed = true;
        waiter.abort("the communicator was closed");
        ExecutorService w;
        synchronized (this) {
            w = worker;
        }
        if (w != null) {
            // Queued calls still run, find the communicator closed and fail their futures.
            w.shutdown();
        }
        family.lock.lock();
        try {
            if (validator != null) {
                validator.close();
            }
            if (parent == null) {
                closeLinks();
            } else {
                scratch.release();
            }
            allocator.close();
        } finally {
            family.lock.unlock();
            if (parent != null) {
                synchronized (parent.children) {
                    parent.children.remove(this);
                }
            }
            if (mbean != null) {
                mbean.unregister();
            }
            onClose.run();
        }
    }

    /**
     * Never blocks on the collective lock: wakes the waits of this family (the thread inside a
     * collective fails with "aborted"), closes the shared links at once (their close is safe beside
     * a thread polling them; peers see this rank gone), and leaves the release of memory, which a
     * running collective may still be touching, to whichever thread holds the lock next: the
     * aborting thread itself when it is free, else the collective's thread as it leaves.
     */
    @Override
    public void abort() {
        synchronized (family) {
            if (family.aborted) {
                return;
            }
            family.aborted = true;
        }
        if (family.failure == null) {
            family.failure = new CollectiveException("rank " + rank + ": the communicator was aborted");
        }
        CommunicatorImpl root = root();
        root.abortWaits(this);
        root.closeLinks();
        family.releasePending = true;
        releaseIfPending();
    }

    private CommunicatorImpl root() {
        CommunicatorImpl c = this;
        while (c.parent != null) {
            c = c.parent;
        }
        return c;
    }

    private void abortWaits(CommunicatorImpl origin) {
        waiter.abort(this == origin ? "abort() was called" : "abort() was called on a communicator sharing its links");
        ExecutorService w;
        synchronized (this) {
            w = worker;
        }
        if (w != null) {
            w.shutdown();
        }
        List<CommunicatorImpl> kids;
        synchronized (children) {
            kids = new ArrayList<>(children);
        }
        for (CommunicatorImpl c : kids) {
            c.abortWaits(origin);
        }
    }

    /**
     * Completes an abort's release (closing the whole family like {@link #close()}) when this
     * thread can take the lock; a thread that holds it calls this after unlocking, so whichever
     * comes last does it.
     */
    private void releaseIfPending() {
        while (family.releasePending && family.lock.tryLock()) {
            try {
                if (family.releasePending) {
                    family.releasePending = false;
                    root().close();
                }
            } finally {
                family.lock.unlock();
            }
        }
    }

    /**
     * Runs a collective; when it fails, the communicator is broken (messages may be half sent), so
     * the links are closed at once: peers still waiting on this rank fail too instead of timing out.
     * The links are shared with the communicators split from the same parent, which break too.
     */
    private void execute(Runnable collective) {
        try {
            collective.run();
        } catch (dev.panamax.collectives.MismatchedCallException e) {
            throw e; // only descriptors moved, completely: the links are in step
        } catch (RuntimeException | Error e) {
            if (family.failure == null) {
                family.failure = e;
            }
            closeLinks(e instanceof dev.panamax.collectives.PeerFailedException pf ? pf.peer() : -1);
            throw e;
        }
    }

    /** Closes every link (idempotent), which also tells the peers this rank is gone. */
    private void closeLinks() {
        closeLinks(-1);
    }

    /** Closes every link; {@code failedRank >= 0}: this rank gave up because that rank failed, which the peers learn. */
    private void closeLinks(int failedRank) {
        for (Link l : links) {
            if (l != null) {
                try {
                    if (failedRank >= 0) {
                        l.closeBlaming(failedRank);
                    } else {
                        l.close();
                    }
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
        run0(collective);
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
        family.lock.lock();
        try {
            ensureOpen();
            execute(collective);
        } finally {
            family.lock.unlock();
            releaseIfPending();
        }
    }

    private void ensureOpen() {
        if (family.aborted) {
            throw new IllegalStateException("rank " + rank + ": the communicator was aborted");
        }
        if (closed) {
            throw new IllegalStateException("rank " + rank + ": the communicator is closed");
        }
        Throwable f = family.failure;
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
