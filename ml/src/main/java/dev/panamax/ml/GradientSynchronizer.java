package dev.panamax.ml;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Averages (or sums) gradients over the ranks of a communicator while back-propagation runs
 * ([ASC-WFBP]: WFBP, MG-WFBP, ASC-WFBP).
 *
 * <p>Use: register every gradient tensor once, in backward order (the order in which they
 * become ready); then in each iteration call {@link #markReady} for each tensor from the compute
 * thread as soon as back-propagation has written it, and {@link #awaitAll} before the optimizer
 * step. A background thread owns the communicator's calls: it all-reduces the tensors in the
 * plan's order while the rest of back-propagation runs, merging consecutive small tensors into
 * one all-reduce through a preallocated fusion buffer, and running two all-reduces at once
 * ({@link Communicator#allReduceConcurrently}) where the {@link AllReduceModel} says that is
 * faster. The plan is {@link LayerTypes#decide}'s for the {@link SyncPolicy}; rank 0 decides and
 * the other ranks follow it, so every rank issues the same collectives.
 *
 * <p>The decision needs each tensor's backward time: given to the builder, or measured here over
 * the first {@link Builder#profileIterations} iterations (which run plain WFBP meanwhile) from the
 * times of the {@code markReady} calls, averaged over the ranks.
 *
 * <p>Rules: every rank registers the same tensors (sizes, order, type) and calls
 * {@link Builder#build} (collective when a model must be calibrated); a tensor must not be touched
 * between its {@code markReady} and the return of {@code awaitAll}; gradient memory must be
 * native and readable from other threads (a shared, global or automatic arena, or
 * {@link Communicator#allocate}); nothing else may use the communicator while the synchronizer is
 * open, since its thread issues collectives at any moment. {@link #close} stops the thread; it
 * does not close the communicator.
 */
public final class GradientSynchronizer implements AutoCloseable {
    /** How long the background thread sleeps at most between checks that it should stop. */
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private final Communicator comm;
    private final SyncPolicy policy;
    private final AllReduceModel model;
    private final double[] givenBackwardSeconds;
    private final int profileIterations;
    private final ReduceOp op;
    private final long timeoutNanos;
    private final GradientCompression compression;
    private final Thread worker;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    // Guarded by lock.
    private final List<MemorySegment> gradients = new ArrayList<>();
    private final List<Long> counts = new ArrayList<>();
    private DataType type;
    private boolean started;
    private int iteration;
    private int completed = -1;
    private int[] markedIn;
    private long[] readyNanos;
    private Throwable failure;
    private boolean closed;

    // Set by the worker, read by anyone.
    private volatile LayerType[] types;
    private volatile BackwardProfile profile;

    private GradientSynchronizer(Builder b, AllReduceModel model) {
        this.comm = b.comm;
        this.policy = b.policy;
        this.model = model;
        this.givenBackwardSeconds = b.backwardSeconds;
        this.profileIterations = b.profileIterations;
        this.op = b.average ? ReduceOp.AVG : ReduceOp.SUM;
        this.timeoutNanos = b.timeoutNanos > 0 ? b.timeoutNanos : comm.timeoutNanos();
        this.compression = b.compression;
        this.worker = new Thread(this::work, "panamax-gradients-rank-" + comm.rank());
        this.worker.setDaemon(true);
    }

    /** A builder for a synchronizer over {@code comm}. */
    public static Builder builder(Communicator comm) {
        return new Builder(comm);
    }

    /** Options of a {@link GradientSynchronizer}; the defaults: ASC-WFBP, averaging, measured profile. */
    public static final class Builder {
        private final Communicator comm;
        private SyncPolicy policy = SyncPolicy.ASC_WFBP;
        private AllReduceModel model;
        private double[] backwardSeconds;
        private int profileIterations = 5;
        private boolean average = true;
        private long timeoutNanos;
        private GradientCompression compression = GradientCompression.none();

        private Builder(Communicator comm) {
            this.comm = Objects.requireNonNull(comm, "comm");
        }

        public Builder policy(SyncPolicy policy) {
            this.policy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /** The cost model; when not given, {@link #build} calibrates one ({@link AllReduceModel#calibrate},
         * collective). */
        public Builder model(AllReduceModel model) {
            this.model = Objects.requireNonNull(model, "model");
            return this;
        }

        /** Each tensor's backward time in seconds, in registration order (the same on every rank); skips the profiling
         * iterations. */
        public Builder backwardSeconds(double[] backwardSeconds) {
            this.backwardSeconds = backwardSeconds.clone();
            return this;
        }

        /** How many iterations to time before deciding when no backward times are given (default 5). */
        public Builder profileIterations(int iterations) {
            if (iterations < 1) {
                throw new IllegalArgumentException("profileIterations must be >= 1: " + iterations);
            }
            this.profileIterations = iterations;
            return this;
        }

        /** Average (the default: {@link ReduceOp#AVG}, the sum divided by the rank count) or sum the gradients. */
        public Builder average(boolean average) {
            this.average = average;
            return this;
        }

        /**
         * How each bucket is all-reduced (default {@link GradientCompression#none()}): for example
         * {@link GradientCompression#bf16()}. The synchronizer closes it when it closes. With a hook other than
         * none, the buckets the plan would all-reduce two at a time go one after the other through the hook.
         */
        public Builder compression(GradientCompression compression) {
            this.compression = Objects.requireNonNull(compression, "compression");
            return this;
        }

        /** How long {@link GradientSynchronizer#awaitAll()} waits (default: the communicator's timeout). */
        public Builder timeout(Duration timeout) {
            this.timeoutNanos = timeout.toNanos();
            return this;
        }

        /** The synchronizer; calibrates the model first (on every rank) when a policy other than WFBP needs one and
         * none was given. */
        public GradientSynchronizer build() {
            AllReduceModel m = model;
            if (m == null && policy != SyncPolicy.WFBP) {
                m = AllReduceModel.calibrate(comm);
            }
            return new GradientSynchronizer(this, m);
        }
    }

    /**
     * Registers the next gradient tensor in backward order: its first {@code count} elements of
     * {@code type}. Every tensor has the same type. Returns its index for {@link #markReady}.
     * Allowed until the first {@code markReady}.
     */
    public int register(MemorySegment gradient, long count, DataType type) {
        Objects.requireNonNull(gradient, "gradient");
        Objects.requireNonNull(type, "type");
        if (count < 0 || count * type.byteSize() > gradient.byteSize()) {
            throw new IllegalArgumentException("count " + count + " of " + type.canonicalName() + " does not fit the "
                    + gradient.byteSize()
                    + "-byte gradient segment");
        }
        if (!gradient.isNative()) {
            throw new IllegalArgumentException("gradient " + gradients.size()
                    + " is a heap segment; all-reduces need native memory");
        }
        compression.requireSupported(type);
        if (!gradient.isAccessibleBy(worker)) {
            throw new IllegalArgumentException("gradient " + gradients.size()
                    + " is confined to its thread; use a shared, global or automatic arena, or Communicator.allocate");
        }
        lock.lock();
        try {
            ensureOpen();
            if (started) {
                throw new IllegalStateException("register after the first markReady: register every tensor before "
                        + "training");
            }
            if (this.type != null && this.type != type) {
                throw new IllegalArgumentException("gradient " + gradients.size() + " is " + type.canonicalName()
                        + ", the others "
                        + this.type.canonicalName() + "; use one synchronizer per data type");
            }
            this.type = type;
            gradients.add(gradient);
            counts.add(count);
            return gradients.size() - 1;
        } finally {
            lock.unlock();
        }
    }

    /** The number of registered tensors. */
    public int tensors() {
        lock.lock();
        try {
            return gradients.size();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Tensor {@code index}'s gradient is final for this iteration: its all-reduce may start. Called
     * once per tensor per iteration, from the compute thread; never blocks.
     */
    public void markReady(int index) {
        long now = System.nanoTime();
        lock.lock();
        try {
            ensureOpen();
            if (index < 0 || index >= gradients.size()) {
                throw new IllegalArgumentException("no gradient " + index + " (" + gradients.size() + " registered)");
            }
            if (!started) {
                start();
            }
            if (markedIn[index] == iteration) {
                throw new IllegalStateException("gradient " + index + " was marked ready twice in iteration "
                        + iteration);
            }
            markedIn[index] = iteration;
            readyNanos[index] = now;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** {@link #awaitAll(Duration)} with the builder's timeout (by default the communicator's). */
    public void awaitAll() {
        awaitAll(Duration.ofNanos(timeoutNanos));
    }

    /**
     * Waits until every gradient of this iteration is reduced on this rank (and written back to
     * its segment); then the next iteration begins. Every tensor must have been marked ready.
     *
     * @throws CollectiveTimeoutException when that takes longer than {@code timeout}
     * @throws CollectiveException        when an all-reduce failed (the synchronizer is unusable then)
     */
    public void awaitAll(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        lock.lock();
        try {
            ensureOpen();
            if (gradients.isEmpty()) {
                iteration++;
                return;
            }
            for (int i = 0; i < gradients.size(); i++) {
                if (!started || markedIn[i] != iteration) {
                    throw new IllegalStateException("gradient " + i + " was not marked ready in iteration "
                            + iteration);
                }
            }
            while (completed < iteration && failure == null && !closed) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new CollectiveTimeoutException("rank " + comm.rank()
                            + ": the gradient all-reduces of iteration " + iteration
                            + " did not finish within " + timeout.toMillis() + " ms");
                }
                changed.awaitNanos(left);
            }
            if (failure != null) {
                throw new CollectiveException("rank " + comm.rank() + ": a gradient all-reduce failed: "
                        + failure.getMessage(), failure);
            }
            ensureOpen();
            iteration++;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CollectiveException("rank " + comm.rank()
                    + ": interrupted while waiting for the gradient all-reduces");
        } finally {
            lock.unlock();
        }
    }

    /** The types the tensors are communicated with now (all normal until the plan is decided); null before the first
     * iteration. */
    public LayerType[] layerTypes() {
        LayerType[] t = types;
        return t == null ? null : t.clone();
    }

    /** The profile the plan was decided on (given or measured); null until decided, and for WFBP. */
    public BackwardProfile profile() {
        return profile;
    }

    /** The model the plan is decided with; null for WFBP when none was given. */
    public AllReduceModel model() {
        return model;
    }

    /** Stops the background thread (waiting up to the timeout for an all-reduce in progress); the communicator stays
     * open. */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        if (worker.isAlive()) {
            try {
                worker.join(TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + 1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("the gradient synchronizer is closed");
        }
    }

    /** Freezes the registration and starts the worker (under the lock). */
    private void start() {
        int n = gradients.size();
        if (givenBackwardSeconds != null && givenBackwardSeconds.length != n) {
            throw new IllegalStateException(givenBackwardSeconds.length + " backward times were given for " + n
                    + " gradients");
        }
        markedIn = new int[n];
        Arrays.fill(markedIn, -1);
        readyNanos = new long[n];
        started = true;
        worker.start();
    }

    // ---- the background thread ----------------------------------------------------------------

    /** Thrown inside the worker when the synchronizer is closed while it waits. */
    private static final class Closed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Closed() {
            super(null, null, false, false);
        }
    }

    /** The worker's plan: the grouping and where each fused group lives in the fusion buffer. */
    private record Plan(Grouping grouping, long[] fusionOffsets, MemorySegment fusion) {
    }

    private void work() {
        Plan plan = null;
        try {
            int n = gradients.size();
            long[] bytes = new long[n];
            for (int i = 0; i < n; i++) {
                bytes[i] = counts.get(i) * type.byteSize();
            }
            double[][] samples = null;
            LayerType[] initial = new LayerType[n];
            Arrays.fill(initial, LayerType.NORMAL);
            if (policy != SyncPolicy.WFBP && givenBackwardSeconds != null) {
                initial = decide(new BackwardProfile(0, givenBackwardSeconds, bytes));
            } else if (policy != SyncPolicy.WFBP) {
                samples = new double[profileIterations][];
            }
            plan = plan(initial, bytes, null);
            for (int it = 0; ; it++) {
                runIteration(plan, it);
                if (samples != null && it < profileIterations) {
                    samples[it] = backwardTimes();
                    if (it == profileIterations - 1) {
                        plan = plan(decide(new BackwardProfile(0, agreedMedian(samples), bytes)), bytes, plan);
                        samples = null;
                    }
                }
                lock.lock();
                try {
                    completed = it;
                    changed.signalAll();
                } finally {
                    lock.unlock();
                }
            }
        } catch (Closed e) {
            // close(): nothing more to do
        } catch (Throwable t) {
            lock.lock();
            try {
                failure = t;
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        } finally {
            if (plan != null && plan.fusion() != null) {
                try {
                    comm.free(plan.fusion());
                } catch (RuntimeException ignored) {
                    // the communicator was closed first, which freed it
                }
            }
            compression.close();
        }
    }

    /** Rank 0 decides the types, every rank takes them (so all issue the same collectives). */
    private LayerType[] decide(BackwardProfile p) {
        this.profile = p;
        int n = p.tensors();
        LayerType[] t = comm.rank() == 0 ? LayerTypes.decide(p, model, policy) : null;
        MemorySegment codes = comm.allocate(4L * Math.max(1, n));
        try {
            if (t != null) {
                for (int i = 0; i < n; i++) {
                    codes.setAtIndex(ValueLayout.JAVA_INT, i, t[i].ordinal());
                }
            }
            comm.broadcast(codes, n, DataType.INT32, 0);
            LayerType[] out = new LayerType[n];
            for (int i = 0; i < n; i++) {
                out[i] = LayerType.values()[codes.getAtIndex(ValueLayout.JAVA_INT, i)];
            }
            return out;
        } finally {
            comm.free(codes);
        }
    }

    /** The plan for {@code t}: one fusion buffer holding every merged group, 64-byte aligned each; frees the old
     * plan's. */
    private Plan plan(LayerType[] t, long[] bytes, Plan old) {
        if (old != null && old.fusion() != null) {
            comm.free(old.fusion());
        }
        Grouping g = Grouping.of(t);
        long[] offsets = new long[g.groups.length];
        long total = 0;
        for (int k = 0; k < g.groups.length; k++) {
            offsets[k] = -1;
            if (g.groups[k].length > 1) {
                offsets[k] = total;
                for (int i : g.groups[k]) {
                    total += bytes[i];
                }
                total = (total + 63) & ~63L;
            }
        }
        types = t.clone();
        return new Plan(g, offsets, total == 0 ? null : comm.allocate(total));
    }

    /** All-reduces iteration {@code it}'s gradients batch by batch, in the plan's order. */
    private void runIteration(Plan plan, int it) {
        Grouping g = plan.grouping();
        for (int[] batch : g.batches) {
            List<MemorySegment> buffers = new ArrayList<>(batch.length);
            long[] batchCounts = new long[batch.length];
            for (int k = 0; k < batch.length; k++) {
                int[] members = g.groups[batch[k]];
                long count = 0;
                if (members.length == 1) {
                    awaitReady(members[0], it);
                    count = counts.get(members[0]);
                    buffers.add(gradients.get(members[0]));
                } else {
                    // Copy each tensor in as soon as it is ready, while the later ones are computed.
                    long offset = plan.fusionOffsets()[batch[k]];
                    for (int i : members) {
                        awaitReady(i, it);
                        long b = counts.get(i) * type.byteSize();
                        MemorySegment.copy(gradients.get(i), 0, plan.fusion(), offset + count * type.byteSize(), b);
                        count += counts.get(i);
                    }
                    buffers.add(plan.fusion().asSlice(offset, count * type.byteSize()));
                }
                batchCounts[k] = count;
            }
            if (compression != GradientCompression.none()) {
                for (int k = 0; k < batch.length; k++) {
                    compression.allReduce(comm, buffers.get(k), batchCounts[k], type, op);
                }
            } else if (batch.length == 1) {
                comm.allReduce(buffers.getFirst(), batchCounts[0], type, op);
            } else {
                comm.allReduceConcurrently(buffers, batchCounts, type, op);
            }
            for (int k = 0; k < batch.length; k++) {
                int[] members = g.groups[batch[k]];
                if (members.length > 1) {
                    long offset = plan.fusionOffsets()[batch[k]];
                    for (int i : members) {
                        long b = counts.get(i) * type.byteSize();
                        MemorySegment.copy(plan.fusion(), offset, gradients.get(i), 0, b);
                        offset += b;
                    }
                }
            }
        }
    }

    private void awaitReady(int index, int it) {
        lock.lock();
        try {
            while (markedIn[index] != it) {
                if (closed) {
                    throw new Closed();
                }
                changed.awaitNanos(POLL_NANOS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Closed();
        } finally {
            lock.unlock();
        }
    }

    /** This iteration's backward time per tensor: the gap since the previous tensor was marked ready (0 for the first).
     * */
    private double[] backwardTimes() {
        lock.lock();
        try {
            double[] t = new double[readyNanos.length];
            for (int i = 1; i < t.length; i++) {
                t[i] = Math.max(0, readyNanos[i] - readyNanos[i - 1]) / 1e9;
            }
            return t;
        } finally {
            lock.unlock();
        }
    }

    /** Per tensor, the median over the profiled iterations, averaged over the ranks. */
    private double[] agreedMedian(double[][] samples) {
        int n = samples[0].length;
        MemorySegment s = comm.allocate(8L * Math.max(1, n));
        try {
            double[] column = new double[samples.length];
            for (int i = 0; i < n; i++) {
                for (int k = 0; k < samples.length; k++) {
                    column[k] = samples[k][i];
                }
                Arrays.sort(column);
                int h = column.length / 2;
                double median = column.length % 2 == 1 ? column[h] : (column[h - 1] + column[h]) / 2;
                s.setAtIndex(ValueLayout.JAVA_DOUBLE, i, median);
            }
            comm.allReduce(s, n, DataType.FLOAT64, ReduceOp.AVG);
            double[] out = new double[n];
            for (int i = 0; i < n; i++) {
                out[i] = s.getAtIndex(ValueLayout.JAVA_DOUBLE, i);
            }
            return out;
        } finally {
            comm.free(s);
        }
    }
}
