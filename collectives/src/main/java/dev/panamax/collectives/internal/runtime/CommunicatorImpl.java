package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.Agreement;
import dev.panamax.collectives.Collective;
import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.ItemReducer;
import dev.panamax.collectives.MismatchedCallException;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.RevokedException;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.internal.config.WaitRule;
import dev.panamax.collectives.internal.elastic.AgreementState;
import dev.panamax.collectives.internal.elastic.Membership;
import dev.panamax.collectives.internal.observe.CommunicatorMBean;
import dev.panamax.collectives.internal.transport.BufferAllocator;
import dev.panamax.collectives.internal.transport.BufferRegistrar;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.Segments;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.memory.Conversions;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;

/**
 * The communicator over a set of {@link Link}s, one per peer. Each call is checked
 * ({@link ArgumentChecks}), finds its {@link Schedule} ({@link PlanCache}) and runs it with the
 * {@link ScheduleExecutor}. Collectives run on the calling thread (asynchronous ones on a
 * per-communicator worker, in issue order) under one lock shared with the communicators split
 * from this one ({@link CommunicatorFamily}), so the ranks see the same order of operations on
 * the shared links. Arguments are checked, and the schedule is built, before any message moves.
 */
public final class CommunicatorImpl implements Communicator {
    private final int rank;
    private final int size;
    private final Link[] links;
    private final long timeoutNanos;
    private final BufferAllocator allocator;
    private final Runnable onClose;
    private final ProgressLoop loop;
    private final ScratchBuffers scratch;
    /** The v-variants' slots, apart from the schedules' scratch; guarded by {@code variableBlocks}. */
    private final ScratchBuffers variableScratch;
    private final ScratchBuffers wireScratch;
    /** Every rank's scalar of the pre-multiplied sum in progress, gathered through {@link #scalarScratch}. */
    private final double[] scalars;
    private final ScratchBuffers scalarScratch;
    /** 1/size for every rank: the scalars of an average ({@link #averagesByScaling}). */
    private final double[] averageScalars;
    private final WireTypeAllReduce wireTypeAllReduce;
    private final VariableBlocks variableBlocks;
    private final ScheduleExecutor executor;
    private final CommunicatorFamily family;
    private final CommunicatorImpl parent;
    private final int localRanks;
    private final int hostCpus;
    private final ArgumentChecks checks;
    private final PlanCache plans;
    /** Small all-reduces in one synchronisation where every peer shares memory with this rank; null otherwise. */
    private final WindowAllReduce window;
    /** What a call leaves to run after unlocking, made once: a closure per call would allocate on every call. */
    private final Runnable closeLinksOnRevoke = this::closeLinksAfterRevoke;
    private final Runnable closeRoot = () -> root().close();
    private final List<CommunicatorImpl> children = new ArrayList<>();
    private volatile CallValidator validator;
    private ExecutorService worker;
    private CompletableFuture<Void> lastAsync = CompletableFuture.completedFuture(null);
    private volatile boolean closed;
    /** Unique in this JVM: names the JMX bean and tags the JFR events. */
    private final long id;
    private final CommunicatorMBean mbean;
    /** Agreement and regrouping for agree() and shrink(). */
    private final Membership membership;
    /** The member id of each rank (its rank in the job as launched), for agreements. */
    private final int[] memberIds;
    /** Unique in the job and the same on every rank: names this communicator's agreements and offspring. */
    private final String name;
    /** Agreements, shrinks and splits so far: numbers the names of the next one (the same on every rank). */
    private int offspring;

    /**
     * @param localRanks how many ranks of this job run on this host (to tell whether the CPUs are
     *                   oversubscribed, which changes how waits idle)
     * @param hostCpus   how many CPUs those ranks may run on together (the union of their affinity masks): they are
     *                   oversubscribed when they outnumber these
     * @param registrar  the transports' hook on each call's buffers, or null
     * @param group      how the ranks agree and regroup, the member id of each rank, and the
     *                   communicator's name in the job
     * @param onClose    releases what the links share, after they are closed
     */
    public CommunicatorImpl(int rank, int size, Link[] links, long timeoutNanos, BufferAllocator allocator,
            int localRanks, int hostCpus, Topology topology, BufferRegistrar registrar, Group group,
            Runnable onClose) {
        this(null, new CommunicatorFamily(), rank, size, links, timeoutNanos, allocator, localRanks, hostCpus,
                topology, registrar, group, onClose);
    }

    /**
     * Who the ranks of a communicator are, for agreements and shrinking: {@code memberIds[r]} is the
     * member id of rank r in {@code membership}, and {@code name} is unique in the job.
     */
    public record Group(Membership membership, int[] memberIds, String name) {
        public Group {
            Objects.requireNonNull(membership, "membership");
            memberIds = memberIds.clone();
            Objects.requireNonNull(name, "name");
        }
    }

    private CommunicatorImpl(CommunicatorImpl parent, CommunicatorFamily family, int rank, int size, Link[] links,
                             long timeoutNanos, BufferAllocator allocator, int localRanks, int hostCpus,
                             Topology topology, BufferRegistrar registrar, Group group, Runnable onClose) {
        if (group.memberIds().length != size) {
            throw new IllegalArgumentException(size + " ranks but " + group.memberIds().length + " member ids");
        }
        this.membership = group.membership();
        this.memberIds = group.memberIds();
        this.name = group.name();
        this.parent = parent;
        this.family = family;
        this.rank = rank;
        this.size = size;
        this.links = links;
        this.timeoutNanos = timeoutNanos;
        this.allocator = allocator;
        this.localRanks = localRanks;
        this.hostCpus = hostCpus;
        this.onClose = onClose;
        this.checks = new ArgumentChecks(rank, size);
        this.plans = new PlanCache(rank, size, topology == null ? Topology.flat(size) : topology);
        this.loop = new ProgressLoop(rank, timeoutNanos, oversubscribed(),
                WaitRule.fromSettings() == WaitRule.SPIN, links);
        this.scratch = new ScratchBuffers(allocator);
        this.variableScratch = new ScratchBuffers(allocator);
        this.wireScratch = new ScratchBuffers(allocator);
        this.scalarScratch = new ScratchBuffers(allocator);
        this.scalars = new double[size];
        this.averageScalars = new double[size];
        Arrays.fill(averageScalars, 1.0 / size);
        this.wireTypeAllReduce = new WireTypeAllReduce(this, wireScratch);
        this.variableBlocks = new VariableBlocks(this, variableScratch);
        this.id = CommunicatorMBean.nextId();
        this.executor = new ScheduleExecutor(links, loop, scratch, id, registrar);
        // Not for split communicators: their links are the parent's, whose windows number the parent's calls.
        this.window = parent == null ? WindowAllReduce.over(rank, links, id) : null;
        this.mbean = CommunicatorMBean.register(this, loop::inFlight, loop::waits, id,
                window == null ? 0 : window.capacityBytes(), () -> closed);
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
        checks.rankIndex(peer, "peer");
        return peer == rank ? "self" : links[peer].kind();
    }

    @Override
    public long timeoutNanos() {
        return timeoutNanos;
    }

    /**
     * Whether this host's ranks outnumber the CPUs they may run on together, so that a wait must not spin: what this
     * communicator's own waits follow, and what waits beside its calls (the GPU stages' signals) should follow too.
     */
    public boolean oversubscribed() {
        return localRanks > hostCpus;
    }

    // ---- blocking collectives -------------------------------------------------------------

    @Override
    public void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        checks.allReduce(send, recv, count, type, op);
        if (usesWindow(count, type)) {
            runInIssueOrder(Call.WINDOW, null, null, send, recv, count, type, op, 0, -1);
        } else {
            runReductionInIssueOrder(Collective.ALL_REDUCE, count, type, op, 0, send, recv);
        }
    }

    @Override
    public void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, DataType wireType,
            ReduceOp op) {
        Objects.requireNonNull(wireType, "wireType");
        if (wireType == type) {
            allReduce(send, recv, count, type, op);
            return;
        }
        if (!Conversions.isNarrowing(type, wireType)) {
            throw new IllegalArgumentException("allReduce: " + type.canonicalName() + " data goes on the wire as "
                    + "itself, or float32 and float64 as bfloat16 or float16, not as " + wireType.canonicalName());
        }
        checks.allReduce(send, recv, count, type, op);
        wireTypeAllReduce.run(send, recv, count, type, wireType, op);
    }

    @Override
    public void allReducePreMulSum(MemorySegment send, MemorySegment recv, long count, DataType type, double scalar) {
        ArgumentChecks.preMulSum("allReducePreMulSum", type);
        checks.allReduce(send, recv, count, type, ReduceOp.SUM);
        if (usesWindow(count, type)) {
            runInIssueOrder(Call.WINDOW_PRE_MUL_SUM, null, null, send, recv, count, type, ReduceOp.SUM, scalar, -1);
        } else {
            runPreMulInIssueOrder(plans.preMulPlan(Collective.ALL_REDUCE, count, type, 0), send, recv, type,
                    ReduceOp.SUM, scalar);
        }
    }

    @Override
    public void reduceScatterPreMulSum(MemorySegment send, MemorySegment recv, long recvCount, DataType type,
            double scalar) {
        ArgumentChecks.preMulSum("reduceScatterPreMulSum", type);
        checks.reduceScatter(send, recv, recvCount, type, ReduceOp.SUM);
        runPreMulInIssueOrder(plans.preMulPlan(Collective.REDUCE_SCATTER, recvCount, type, 0), send, recv, type,
                ReduceOp.SUM, scalar);
    }

    @Override
    public void reducePreMulSum(MemorySegment send, MemorySegment recv, long count, DataType type, double scalar,
            int root) {
        ArgumentChecks.preMulSum("reducePreMulSum", type);
        checks.reduce(send, recv, count, type, ReduceOp.SUM, root);
        runPreMulInIssueOrder(plans.preMulPlan(Collective.REDUCE, count, type, root), send, recv, type, ReduceOp.SUM,
                scalar);
    }

    @Override
    public void allReduceConcurrently(List<MemorySegment> buffers, long[] counts, DataType type, ReduceOp op) {
        ArgumentChecks.reduction(type, op);
        Objects.requireNonNull(buffers, "buffers");
        Objects.requireNonNull(counts, "counts");
        if (buffers.size() != counts.length) {
            throw new IllegalArgumentException("allReduceConcurrently: " + buffers.size() + " buffers but "
                    + counts.length + " counts");
        }
        int k = counts.length;
        MemorySegment[] data = new MemorySegment[k];
        for (int j = 0; j < k; j++) {
            ArgumentChecks.buffer("buffer " + j, buffers.get(j), counts[j], type, true);
            data[j] = buffers.get(j).asSlice(0, counts[j] * type.byteSize());
            for (int i = 0; i < j; i++) {
                if (ArgumentChecks.overlaps(data[i], data[j])) {
                    throw new IllegalArgumentException("allReduceConcurrently: buffers " + i + " and " + j
                            + " overlap");
                }
            }
        }
        PreMulPlan[] concurrent = new PreMulPlan[k];
        for (int j = 0; j < k; j++) {
            concurrent[j] = plans.concurrentPlan(counts[j], type);
        }
        boolean scaling = averagesByScaling(type, op);
        runInIssueOrder(() -> {
            CallValidator v = validator;
            if (v != null) {
                for (PreMulPlan p : concurrent) {
                    v.check(p.schedule(), type, op);
                }
            }
            executor.runConcurrently(concurrent, data, type, scaling ? ReduceOp.SUM : op,
                    scaling ? averageScalars : null);
        });
    }

    @Override
    public void reduceScatter(MemorySegment send, MemorySegment recv, long recvCount, DataType type, ReduceOp op) {
        checks.reduceScatter(send, recv, recvCount, type, op);
        runReductionInIssueOrder(Collective.REDUCE_SCATTER, recvCount, type, op, 0, send, recv);
    }

    @Override
    public void allGather(MemorySegment send, MemorySegment recv, long sendCount, DataType type) {
        checks.allGather(send, recv, sendCount, type);
        runScheduleInIssueOrder(plans.plan(Collective.ALL_GATHER, sendCount, type, 0), send, recv, type, null);
    }

    @Override
    public void broadcast(MemorySegment send, MemorySegment recv, long count, DataType type, int root) {
        checks.broadcast(send, recv, count, type, root);
        runScheduleInIssueOrder(plans.plan(Collective.BROADCAST, count, type, root), send, recv, type, null);
    }

    @Override
    public void reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        checks.reduce(send, recv, count, type, op, root);
        runReductionInIssueOrder(Collective.REDUCE, count, type, op, root, send, recv);
    }

    @Override
    public void allToAll(MemorySegment send, MemorySegment recv, long count, DataType type) {
        checks.allToAll(send, recv, count, type);
        runScheduleInIssueOrder(plans.plan(Collective.ALL_TO_ALL, count, type, 0), send, recv, type, null);
    }

    @Override
    public void reduceScatterV(MemorySegment send, MemorySegment recv, long[] counts, DataType type, ReduceOp op) {
        synchronized (variableBlocks) {
            variableBlocks.reduceScatter(send, recv, counts, type, op);
        }
    }

    @Override
    public void allGatherV(MemorySegment send, MemorySegment recv, long[] counts, DataType type) {
        synchronized (variableBlocks) {
            variableBlocks.allGather(send, recv, counts, type);
        }
    }

    @Override
    public void reduceScatterV(MemorySegment send, MemorySegment recv, long[] itemCounts, int itemBytes,
            ItemReducer reducer) {
        synchronized (variableBlocks) {
            variableBlocks.reduceScatter(send, recv, itemCounts, itemBytes, reducer);
        }
    }

    @Override
    public void allReduce(MemorySegment buffer, long itemCount, int itemBytes, ItemReducer reducer) {
        synchronized (variableBlocks) {
            variableBlocks.allReduce(buffer, itemCount, itemBytes, reducer);
        }
    }

    @Override
    public void reduce(MemorySegment send, MemorySegment recv, long itemCount, int itemBytes, ItemReducer reducer,
            int root) {
        synchronized (variableBlocks) {
            variableBlocks.reduce(send, recv, itemCount, itemBytes, reducer, root);
        }
    }

    @Override
    public void barrier() {
        runScheduleInIssueOrder(plans.plan(Collective.BARRIER, 0, DataType.UINT8, 0), MemorySegment.NULL,
                MemorySegment.NULL, DataType.UINT8, null);
    }

    @Override
    public void send(MemorySegment buffer, long count, DataType type, int peer) {
        checks.pointToPoint(buffer, count, type, peer, false);
        runInIssueOrder(Call.SEND, null, null, buffer, null, count, type, null, 0, peer);
    }

    @Override
    public void recv(MemorySegment buffer, long count, DataType type, int peer) {
        checks.pointToPoint(buffer, count, type, peer, true);
        runInIssueOrder(Call.RECEIVE, null, null, null, buffer, count, type, null, 0, peer);
    }

    // ---- asynchronous collectives: same checks, then the caller's buffers are handed to the worker

    @Override
    public CompletableFuture<Void> allReduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type,
            ReduceOp op) {
        checks.allReduce(send, recv, count, type, op);
        MemorySegment sd = Segments.unscoped(send);
        MemorySegment rv = Segments.unscoped(recv);
        if (usesWindow(count, type)) {
            return runOnWorker(() -> window.run(loop, sd, rv, count, type, op, false, 0));
        }
        return runOnWorker(reduction(Collective.ALL_REDUCE, count, type, op, 0, sd, rv));
    }

    @Override
    public CompletableFuture<Void> reduceScatterAsync(MemorySegment send, MemorySegment recv, long recvCount,
            DataType type,
                                                      ReduceOp op) {
        checks.reduceScatter(send, recv, recvCount, type, op);
        return runOnWorker(reduction(Collective.REDUCE_SCATTER, recvCount, type, op, 0, Segments.unscoped(send),
                Segments.unscoped(recv)));
    }

    @Override
    public CompletableFuture<Void> allGatherAsync(MemorySegment send, MemorySegment recv, long sendCount,
            DataType type) {
        checks.allGather(send, recv, sendCount, type);
        return async(plans.plan(Collective.ALL_GATHER, sendCount, type, 0), send, recv, type, null);
    }

    @Override
    public CompletableFuture<Void> broadcastAsync(MemorySegment send, MemorySegment recv, long count, DataType type,
            int root) {
        checks.broadcast(send, recv, count, type, root);
        return async(plans.plan(Collective.BROADCAST, count, type, root), send, recv, type, null);
    }

    @Override
    public CompletableFuture<Void> reduceAsync(MemorySegment send, MemorySegment recv, long count, DataType type,
            ReduceOp op,
                                               int root) {
        checks.reduce(send, recv, count, type, op, root);
        return runOnWorker(reduction(Collective.REDUCE, count, type, op, root, Segments.unscoped(send),
                Segments.unscoped(recv)));
    }

    @Override
    public CompletableFuture<Void> allToAllAsync(MemorySegment send, MemorySegment recv, long count, DataType type) {
        checks.allToAll(send, recv, count, type);
        return async(plans.plan(Collective.ALL_TO_ALL, count, type, 0), send, recv, type, null);
    }

    @Override
    public CompletableFuture<Void> barrierAsync() {
        return async(plans.plan(Collective.BARRIER, 0, DataType.UINT8, 0), MemorySegment.NULL, MemorySegment.NULL,
                DataType.UINT8, null);
    }

    private CompletableFuture<Void> async(Schedule s, MemorySegment send, MemorySegment recv, DataType type,
            ReduceOp op) {
        MemorySegment sd = send == null ? null : Segments.unscoped(send);
        MemorySegment rv = recv == null ? null : Segments.unscoped(recv);
        return runOnWorker(() -> runSchedule(s, sd, rv, type, op));
    }

    /** Runs a user collective's schedule, after the cross-rank check of the call when validation is on. */
    private void runSchedule(Schedule s, MemorySegment send, MemorySegment recv, DataType type, ReduceOp op) {
        CallValidator v = validator;
        if (v != null) {
            v.check(s, type, op);
        }
        executor.runSchedule(s, send, recv, type, op);
    }

    /**
     * A pre-multiplied sum: every rank's scalar first (an all-gather of one float64 each: a receiver scales the raw
     * input a peer sends it by that peer's scalar), then the plan's schedule.
     */
    private void runPreMulSum(PreMulPlan p, MemorySegment send, MemorySegment recv, DataType type, double scalar) {
        CallValidator v = validator;
        if (v != null) {
            v.check(p.schedule(), type, ReduceOp.SUM);
        }
        if (size > 1) {
            // Two slots (not two slices of one table) so that the all-gather sees the same buffer objects each call.
            MemorySegment all = scalarScratch.get(0, 8L * size);
            MemorySegment own = scalarScratch.get(1, 8);
            own.set(ValueLayout.JAVA_DOUBLE, 0, scalar);
            runSchedule(plans.scalarGather(), own, all, DataType.FLOAT64, null);
            MemorySegment.copy(all, ValueLayout.JAVA_DOUBLE, 0, scalars, 0, size);
        } else {
            scalars[0] = scalar;
        }
        executor.runPreMulSum(p, send, recv, type, scalars);
    }

    /**
     * {@link ReduceOp#AVG} of float32, float64 and float16 is the pre-multiplied sum with every scalar 1/size, as
     * NCCL averages floats: each input scaled as it enters the sum, no pass added, and a float16 average does not
     * overflow where the sum would. bfloat16 (float32's range: its sum does not overflow either) and the integers
     * sum, then divide the block each rank owns: for bfloat16 that is cheaper than scaling in its vector kernels
     * (measured 1.5-2x, docs/results/numerics.md).
     */
    static boolean averagesByScaling(DataType type, ReduceOp op) {
        return op == ReduceOp.AVG && type.isFloatingPoint() && type != DataType.BFLOAT16;
    }

    /**
     * A reducing collective, planned now (so a bad choice fails before any message moves), to run in issue order or
     * on the worker: the plain schedule, or the pre-multiplied one for an average by scaling.
     */
    private Runnable reduction(Collective collective, long count, DataType type, ReduceOp op, int root,
            MemorySegment send, MemorySegment recv) {
        if (averagesByScaling(type, op)) {
            PreMulPlan p = plans.preMulPlan(collective, count, type, root);
            return () -> runAverage(p, send, recv, type);
        }
        Schedule s = plans.plan(collective, count, type, root);
        return () -> runSchedule(s, send, recv, type, op);
    }

    /**
     * Whether an all-reduce of {@code count} elements of {@code type} runs over the {@link #window}: where every peer
     * shares one, the call fits it, the planner chooses (no algorithm selected) and calls are not validated (the
     * validation exchanges a schedule's description). Every rank answers alike for the same call.
     */
    private boolean usesWindow(long count, DataType type) {
        return window != null && window.fits(count, type) && validator == null
                && Algorithms.AUTO.equals(plans.algorithm(Collective.ALL_REDUCE));
    }

    /** As {@code runInIssueOrder(reduction(...))}, without a closure. */
    private void runReductionInIssueOrder(Collective collective, long count, DataType type, ReduceOp op, int root,
            MemorySegment send, MemorySegment recv) {
        if (averagesByScaling(type, op)) {
            runPreMulInIssueOrder(plans.preMulPlan(collective, count, type, root), send, recv, type, op, 0);
        } else {
            runScheduleInIssueOrder(plans.plan(collective, count, type, root), send, recv, type, op);
        }
    }

    /** An average by scaling: the scalars are known (1/size each), so none are exchanged. */
    private void runAverage(PreMulPlan p, MemorySegment send, MemorySegment recv, DataType type) {
        CallValidator v = validator;
        if (v != null) {
            v.check(p.schedule(), type, ReduceOp.AVG);
        }
        executor.runPreMulSum(p, send, recv, type, averageScalars);
    }

    // ---- validation and determinism -------------------------------------------------------

    @Override
    public void setCallValidation(boolean on) {
        family.lock();
        try {
            if (on && validator == null) {
                validator = new CallValidator(rank, size, executor, allocator);
            } else if (!on && validator != null) {
                validator.close();
                validator = null;
            }
        } finally {
            family.unlock();
        }
    }

    @Override
    public boolean callValidation() {
        return validator != null;
    }

    @Override
    public void setDeterministic(boolean on) {
        plans.setDeterministic(on);
    }

    @Override
    public boolean deterministic() {
        return plans.deterministic();
    }

    // ---- algorithms, topology -------------------------------------------------------------

    @Override
    public Topology topology() {
        return plans.topology();
    }

    @Override
    public void setTopology(Topology topology) {
        plans.setTopology(topology);
    }

    @Override
    public void setAlgorithm(Collective collective, String algorithm) {
        plans.setAlgorithm(collective, algorithm);
    }

    @Override
    public String algorithm(Collective collective) {
        return plans.algorithm(collective);
    }

    @Override
    public String plannedAlgorithm(Collective collective, long count, DataType type, int root) {
        Objects.requireNonNull(collective, "collective");
        Objects.requireNonNull(type, "type");
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0: " + count);
        }
        boolean rooted = collective == Collective.BROADCAST || collective == Collective.REDUCE;
        if (rooted) {
            checks.rankIndex(root, "root");
        }
        if (collective == Collective.ALL_REDUCE && usesWindow(count, type)) {
            return SHARED_WINDOWS;
        }
        if (collective == Collective.BARRIER) {
            return plans.algorithmFor(collective, 0, DataType.UINT8, 0);
        }
        return plans.algorithmFor(collective, count, type, rooted ? root : 0);
    }

    // ---- split ----------------------------------------------------------------------------

    @Override
    public Communicator split(int color, int key) {
        if (color < 0 && color != UNDEFINED) {
            throw new IllegalArgumentException("color must be >= 0 or UNDEFINED (-1): " + color);
        }
        MemorySegment all = allocate(8L * size);
        String splitName = nextName("split");
        int[] colors = new int[size];
        int[] keys = new int[size];
        try {
            MemorySegment mine = allocate(8);
            try {
                mine.set(ValueLayout.JAVA_INT, 0, color);
                mine.set(ValueLayout.JAVA_INT, 4, key);
                // The exchange runs the ring whatever algorithm the user selected for all-gather.
                Schedule ring = Algorithms.get(Algorithms.RING)
                        .build(new Problem(Collective.ALL_GATHER, rank, size, 2, 4, 0, plans.topology()));
                runInIssueOrder(() -> executor.runSchedule(ring, mine, all, DataType.INT32, null));
            } finally {
                free(mine);
            }
            for (int q = 0; q < size; q++) {
                colors[q] = all.get(ValueLayout.JAVA_INT, 8L * q);
                keys[q] = all.get(ValueLayout.JAVA_INT, 8L * q + 4);
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
        int[] subMembers = new int[m];
        for (int i = 0; i < m; i++) {
            subMembers[i] = memberIds[members.get(i)];
        }
        Group subGroup = new Group(membership, subMembers, splitName + "/color" + color);
        SplitAllocator subAllocator = new SplitAllocator(allocator);
        CommunicatorImpl child = new CommunicatorImpl(this, family, subRank, m, sub, timeoutNanos, subAllocator,
                Math.min(localRanks, m), hostCpus, Topology.flat(m), executor.registrar(), subGroup,
                subAllocator::close);
        synchronized (children) {
            children.add(child);
        }
        return child;
    }

    // ---- revoke, agree, shrink --------------------------------------------------------------

    /**
     * Marks the family revoked and wakes its waits at once (a running collective throws
     * {@link RevokedException}); the links are closed with the revoke code now when no collective
     * holds the lock, else by the collective's thread as it leaves ({@link #runLocked}), as only the
     * lock's holder may write on a stream link (also when the collective ended well before it saw the
     * revoke).
     */
    @Override
    public void revoke() {
        CommunicatorImpl root = root();
        if (closed || family.isAborted() || family.failure() != null) {
            return;
        }
        int revoker = root.rank;
        if (!family.markRevoked(revoker, new RevokedException(revoker, "rank " + revoker
                + ": the communicator was revoked by this rank"))) {
            return;
        }
        root.revokeWaits(revoker);
        family.closeLinksIfRevoked(() -> root.closeLinks(-1, revoker));
    }

    private void revokeWaits(int revoker) {
        loop.revoke(revoker);
        List<CommunicatorImpl> kids;
        synchronized (children) {
            kids = new ArrayList<>(children);
        }
        for (CommunicatorImpl c : kids) {
            c.revokeWaits(revoker);
        }
    }

    @Override
    public Agreement agree(long flags) {
        family.ensureNotClosed(rank, closed);
        AgreementState.Decision d = membership.agree(nextName("agree"), memberIds, memberIds[rank], flags,
                timeoutNanos);
        List<Integer> failed = new ArrayList<>();
        for (int m : d.failedMembers()) {
            failed.add(rankOf(m));
        }
        failed.sort(null);
        return new Agreement(d.flags(), failed);
    }

    @Override
    public Communicator shrink() {
        family.ensureNotClosed(rank, closed);
        String base = nextName("shrink");
        int self = memberIds[rank];
        AgreementState.Decision d = membership.agree(base, memberIds, self, -1L, timeoutNanos);
        int[] survivors = Arrays.stream(memberIds).filter(m -> !d.failed(m)).toArray();
        Communicator c;
        try {
            c = membership.connect(base + "/comm", survivors, self, timeoutNanos);
        } catch (PeerFailedException e) {
            int lost = rankOf(e.peer());
            throw new PeerFailedException(lost, "rank " + rank + ": shrink() failed: rank " + lost
                    + " died or left while the survivors connected; call shrink() again", e);
        }
        return withSettingsOfThis(c);
    }

    @Override
    public Communicator grow(int newRanks) {
        if (newRanks < 0) {
            throw new IllegalArgumentException("newRanks must be >= 0: " + newRanks);
        }
        family.ensureNotClosed(rank, closed);
        String base = nextName("grow") + "/comm";
        int self = memberIds[rank];
        int[] members = membership.grow(base, memberIds, self, newRanks, timeoutNanos);
        Communicator c;
        try {
            c = membership.connect(base, members, self, timeoutNanos);
        } catch (PeerFailedException e) {
            // Ranks keep their numbers, so the position in the new member list names it in both.
            int lost = 0;
            while (lost < members.length - 1 && members[lost] != e.peer()) {
                lost++;
            }
            String who = lost < size ? "rank " + lost : "the joining process that was to be rank " + lost;
            throw new PeerFailedException(lost, "rank " + rank + ": grow(" + newRanks + ") failed: " + who
                    + " died or left while the ranks connected", e);
        }
        return withSettingsOfThis(c);
    }

    /** {@code c}, a communicator made from this one, with this one's call validation and deterministic mode. */
    private Communicator withSettingsOfThis(Communicator c) {
        try {
            c.setCallValidation(callValidation());
            c.setDeterministic(deterministic());
        } catch (RuntimeException e) {
            c.close();
            throw e;
        }
        return c;
    }

    /** The name of the next agreement or derived communicator of {@code kind}: the same on every rank. */
    private synchronized String nextName(String kind) {
        return name + "/" + kind + offspring++;
    }

    private int rankOf(int member) {
        for (int r = 0; r < size; r++) {
            if (memberIds[r] == member) {
                return r;
            }
        }
        throw new IllegalStateException("member " + member + " is not in this communicator");
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
        loop.abort("the communicator was closed");
        ExecutorService w;
        synchronized (this) {
            w = worker;
        }
        if (w != null) {
            // Queued calls still run, find the communicator closed and fail their futures.
            w.shutdown();
        }
        family.lock();
        try {
            if (validator != null) {
                validator.close();
            }
            if (parent == null) {
                closeLinks(-1, -1);
            } else {
                scratch.release();
                synchronized (variableBlocks) {
                    variableScratch.release();
                }
                synchronized (wireTypeAllReduce) {
                    wireScratch.release();
                }
                scalarScratch.release();
            }
            allocator.close();
        } finally {
            family.unlock();
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
     * a thread polling them; peers see this rank gone), and leaves the release of memory to the
     * family ({@link CommunicatorFamily#releaseIfPending}).
     */
    @Override
    public void abort() {
        if (!family.markAborted(rank)) {
            return;
        }
        CommunicatorImpl root = root();
        root.abortWaits(this);
        root.closeLinks(-1, -1);
        family.scheduleRelease();
        family.releaseIfPending(closeRoot);
    }

    private CommunicatorImpl root() {
        CommunicatorImpl c = this;
        while (c.parent != null) {
            c = c.parent;
        }
        return c;
    }

    private void abortWaits(CommunicatorImpl origin) {
        loop.abort(this == origin ? "abort() was called" : "abort() was called on a communicator sharing its links");
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
     * Closes every link (idempotent), which also tells the peers this rank is gone;
     * {@code failedRank >= 0}: this rank gave up because that rank failed, which the peers learn;
     * {@code revoker >= 0}: the communicator was revoked by that rank, which the peers learn instead.
     */
    private void closeLinks(int failedRank, int revoker) {
        for (Link l : links) {
            if (l != null) {
                try {
                    if (revoker >= 0) {
                        l.closeRevoked(revoker);
                    } else if (failedRank >= 0) {
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

    /** Runs a call on this thread after the asynchronous calls issued before it, keeping issue order on every rank. */
    private void runInIssueOrder(Runnable collective) {
        awaitEarlierAsync();
        runLocked(collective);
    }

    private void runScheduleInIssueOrder(Schedule s, MemorySegment send, MemorySegment recv, DataType type,
            ReduceOp op) {
        runInIssueOrder(Call.SCHEDULE, s, null, send, recv, 0, type, op, 0, -1);
    }

    /** A pre-multiplied sum ({@code op} SUM) or an average by scaling ({@code op} AVG) planned as {@code p}. */
    private void runPreMulInIssueOrder(PreMulPlan p, MemorySegment send, MemorySegment recv, DataType type,
            ReduceOp op, double scalar) {
        runInIssueOrder(Call.PRE_MUL_PLAN, null, p, send, recv, 0, type, op, scalar, -1);
    }

    /** What a call written out without a closure runs, and which of the arguments it reads. */
    private enum Call {
        /** An all-reduce of {@code count} elements over the {@link #window}. */
        WINDOW,
        /** A pre-multiplied sum ({@code scalar}) of {@code count} elements over the {@link #window}. */
        WINDOW_PRE_MUL_SUM,
        /** The schedule {@code s}. */
        SCHEDULE,
        /** The plan {@code p}: an average by scaling ({@code op} AVG) or a pre-multiplied sum ({@code scalar}). */
        PRE_MUL_PLAN,
        /** A send of {@code count} elements at the start of {@code send} to {@code peer}. */
        SEND,
        /** A receive of {@code count} elements into the start of {@code recv} from {@code peer}. */
        RECEIVE
    }

    /**
     * As {@link #runInIssueOrder(Runnable)} for the calls a loop of small messages repeats, with the steps of
     * {@link #runLocked} and {@link #runOrBreakLinks} written out and the call named by {@code call}: a closure per
     * call would be the only allocation of a repeated small collective, a ping-pong or a pipeline of small messages.
     */
    private void runInIssueOrder(Call call, Schedule s, PreMulPlan p, MemorySegment send, MemorySegment recv,
            long count, DataType type, ReduceOp op, double scalar, int peer) {
        awaitEarlierAsync();
        family.lock();
        try {
            ensureOpen();
            try {
                switch (call) {
                    case WINDOW, WINDOW_PRE_MUL_SUM -> window.run(loop, send, recv, count, type, op,
                            call == Call.WINDOW_PRE_MUL_SUM, scalar);
                    case SCHEDULE -> runSchedule(s, send, recv, type, op);
                    case PRE_MUL_PLAN -> {
                        if (op == ReduceOp.AVG) {
                            runAverage(p, send, recv, type);
                        } else {
                            runPreMulSum(p, send, recv, type, scalar);
                        }
                    }
                    case SEND -> executor.pointToPoint(true, rank, size, peer, send, count, type);
                    case RECEIVE -> executor.pointToPoint(false, rank, size, peer, recv, count, type);
                }
            } catch (RuntimeException | Error e) {
                breakLinksAfter(e);
                throw e;
            }
        } finally {
            unlockAndFinishPending();
        }
    }

    private void awaitEarlierAsync() {
        ensureOpen();
        CompletableFuture<Void> pending;
        synchronized (this) {
            pending = lastAsync;
        }
        if (!pending.isDone()) {
            pending.exceptionally(t -> null).join();
        }
    }

    /** Queues a call on this communicator's worker thread, after the calls queued before it. */
    private CompletableFuture<Void> runOnWorker(Runnable collective) {
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
                CompletableFuture<Void> f = CompletableFuture.runAsync(() -> runLocked(collective), worker);
                lastAsync = f;
                return f;
            } catch (RejectedExecutionException e) {
                throw new CollectiveException("rank " + rank + ": the communicator is closed");
            }
        }
    }

    /** Runs a call under the family's lock, then completes an abort's release if one is pending. */
    private void runLocked(Runnable collective) {
        family.lock();
        try {
            ensureOpen();
            runOrBreakLinks(collective);
        } finally {
            unlockAndFinishPending();
        }
    }

    /** Unlocks, then does what a revoke or an abort left for the lock's holder. */
    private void unlockAndFinishPending() {
        family.unlock();
        family.closeLinksIfRevoked(closeLinksOnRevoke);
        family.releaseIfPending(closeRoot);
    }

    /**
     * Runs a call; when it fails, the communicator is broken (messages may be half sent), so the
     * links are closed at once: peers still waiting on this rank fail too instead of timing out.
     * The links are shared with the communicators split from the same parent, which break too.
     */
    private void runOrBreakLinks(Runnable collective) {
        try {
            collective.run();
        } catch (RuntimeException | Error e) {
            breakLinksAfter(e);
            throw e;
        }
    }

    /** What a failed call leaves behind: closed links (see {@link #runOrBreakLinks}); the caller rethrows. */
    private void breakLinksAfter(Throwable e) {
        if (e instanceof MismatchedCallException) {
            return; // only descriptors moved, completely: the links are in step
        }
        if (e instanceof RevokedException r) {
            // Heard from a peer, or this rank's own revoke woke the call: pass it on to every peer.
            family.markRevoked(r.revoker(), r);
            closeLinksAfterRevoke();
            return;
        }
        family.recordFailure(e);
        closeLinks(e instanceof PeerFailedException pf ? pf.peer() : -1, family.revokedBy());
    }

    private void closeLinksAfterRevoke() {
        root().closeLinks(-1, family.revokedBy());
    }

    private void ensureOpen() {
        family.ensureOpen(rank, closed);
    }
}
