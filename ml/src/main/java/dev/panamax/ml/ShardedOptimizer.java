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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Sharded data parallelism with ZeRO's stage 1 and 2 semantics (Rajbhandari et al. 2020; PyTorch
 * FSDP's {@code SHARD_GRAD_OP}): every rank holds the whole model and computes the gradients of its
 * share of the batch, but keeps the optimizer's state for, and updates, only its shard of the
 * parameters; the parameters are then all-gathered, so every rank starts the next forward pass with
 * the same model. The optimizer's state per rank drops by the world size
 * ({@link #optimizerStateBytes()} against {@link #unshardedStateBytes()}).
 *
 * <p>The parameters and gradients live in two flat buffers from {@link Communicator#allocate}, which
 * the model reads and writes through the views {@link #parameters(int)} and {@link #gradient(int)}
 * (no copy). Tensors are registered in backward order and grouped into buckets of about
 * {@link Builder#bucketBytes} in that order; each bucket is padded to a multiple of the world size
 * and split into equal blocks, rank r owning block r of every bucket, so every bucket's exchange is
 * balanced. As back-propagation finishes a bucket's tensors ({@link #markReady}), its gradients are
 * averaged while the rest of back-propagation runs (WFBP's overlap): reduce-scattered in place
 * ({@link Stage#GRADIENTS}, ZeRO-2: each rank receives only its blocks' averages) or all-reduced
 * ({@link Stage#OPTIMIZER_STATE}, ZeRO-1). Buckets are issued strictly in bucket order, so every
 * rank issues the same collectives in the same order whatever order its tensors finish in.
 * {@link #step()} issues what is left, waits for the exchange, applies the optimizer to this rank's
 * blocks and all-gathers every bucket's parameters in place.
 *
 * <p>With the same global batch the run follows unsharded training with the same optimizer (one
 * rank, or every rank updating everything) up to the rounding of the average. Calls come from one
 * thread; nothing else may use the communicator between the first {@code markReady} of a step and
 * the return of {@code step()}. {@link #close} frees both buffers; it does not close the
 * communicator.
 */
public final class ShardedOptimizer implements AutoCloseable {
    /** Which of ZeRO's stages: what is sharded besides the optimizer's state. */
    public enum Stage {
        /** ZeRO-1: the optimizer's state; gradients are all-reduced whole. */
        OPTIMIZER_STATE,
        /** ZeRO-2: the optimizer's state and the averaged gradients (reduce-scatter instead of all-reduce). */
        GRADIENTS
    }

    private final Communicator comm;
    private final Optimizer optimizer;
    private final Stage stage;
    private final DataType type;
    private final long timeoutNanos;
    private final int elementBytes;

    private final long[] tensorOffset;
    private final long[] tensorCount;
    private final int[] bucketOf;
    /** Per bucket: first element, real length, padded length / world size (the block), first state index. */
    private final long[] bucketStart;
    private final long[] bucketLength;
    private final long[] block;
    private final int[] stateStart;
    private final int[] bucketTensors;

    private final MemorySegment parameters;
    private final MemorySegment gradients;
    private final double[][] state;
    private final int owned;
    private final double[] scratchParameters;
    private final double[] scratchGradients;

    private final boolean[] marked;
    private final int[] unmarkedInBucket;
    private final List<CompletableFuture<Void>> inFlight = new ArrayList<>();
    private int nextBucket;
    private long steps;
    private boolean closed;

    private ShardedOptimizer(Builder b) {
        comm = b.comm;
        optimizer = b.optimizer;
        stage = b.stage;
        type = b.type;
        elementBytes = type == DataType.FLOAT64 ? 8 : 4;
        timeoutNanos = b.timeoutNanos > 0 ? b.timeoutNanos : comm.timeoutNanos();
        int tensors = b.counts.size();
        int n = comm.size();
        tensorOffset = new long[tensors];
        tensorCount = new long[tensors];
        bucketOf = new int[tensors];
        List<long[]> buckets = new ArrayList<>(); // {start, length, padded, tensors}
        long offset = 0;
        long bucketBegin = 0;
        int inBucket = 0;
        for (int t = 0; t < tensors; t++) {
            tensorOffset[t] = offset;
            tensorCount[t] = b.counts.get(t);
            bucketOf[t] = buckets.size();
            offset += tensorCount[t];
            inBucket++;
            boolean full = (offset - bucketBegin) * elementBytes >= b.bucketBytes;
            if (full || t == tensors - 1) {
                long length = offset - bucketBegin;
                long padded = (length + n - 1) / n * n;
                buckets.add(new long[] {bucketBegin, length, padded, inBucket});
                offset = bucketBegin + padded;
                bucketBegin = offset;
                inBucket = 0;
            }
        }
        int count = buckets.size();
        bucketStart = new long[count];
        bucketLength = new long[count];
        block = new long[count];
        stateStart = new int[count];
        bucketTensors = new int[count];
        long ownedTotal = 0;
        long largestBlock = 0;
        for (int k = 0; k < count; k++) {
            long[] bk = buckets.get(k);
            bucketStart[k] = bk[0];
            bucketLength[k] = bk[1];
            block[k] = bk[2] / n;
            bucketTensors[k] = (int) bk[3];
            stateStart[k] = (int) ownedTotal;
            ownedTotal += block[k];
            largestBlock = Math.max(largestBlock, block[k]);
        }
        if (ownedTotal > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("a rank's shard of " + ownedTotal
                    + " parameters exceeds one Java array");
        }
        owned = (int) ownedTotal;
        long bytes = Math.max(1, offset) * elementBytes;
        parameters = comm.allocate(bytes);
        MemorySegment g;
        try {
            g = comm.allocate(bytes);
        } catch (RuntimeException | Error e) {
            comm.free(parameters);
            throw e;
        }
        gradients = g;
        state = new double[optimizer.stateSlots()][owned];
        scratchParameters = new double[(int) largestBlock];
        scratchGradients = new double[(int) largestBlock];
        marked = new boolean[tensors];
        unmarkedInBucket = bucketTensors.clone();
    }

    /** A builder for a sharded optimizer over {@code comm}. */
    public static Builder builder(Communicator comm) {
        return new Builder(comm);
    }

    /** Options of a {@link ShardedOptimizer}; the defaults: ZeRO-2, float32, 4 MiB buckets. */
    public static final class Builder {
        private final Communicator comm;
        private final List<Long> counts = new ArrayList<>();
        private Optimizer optimizer;
        private Stage stage = Stage.GRADIENTS;
        private DataType type = DataType.FLOAT32;
        private long bucketBytes = 4L << 20;
        private long timeoutNanos;

        private Builder(Communicator comm) {
            this.comm = Objects.requireNonNull(comm, "comm");
        }

        /** Adds a tensor of {@code count} elements, after those added before it: add them in backward order. */
        public Builder tensor(long count) {
            if (count < 1) {
                throw new IllegalArgumentException("a tensor has at least one element: " + count);
            }
            counts.add(count);
            return this;
        }

        /** The optimizer (required). */
        public Builder optimizer(Optimizer optimizer) {
            this.optimizer = Objects.requireNonNull(optimizer, "optimizer");
            return this;
        }

        /** ZeRO-1 or ZeRO-2 (the default). */
        public Builder stage(Stage stage) {
            this.stage = Objects.requireNonNull(stage, "stage");
            return this;
        }

        /** The element type of parameters and gradients: {@link DataType#FLOAT32} (the default) or FLOAT64. */
        public Builder type(DataType type) {
            if (type != DataType.FLOAT32 && type != DataType.FLOAT64) {
                throw new IllegalArgumentException("parameters are FLOAT32 or FLOAT64, not " + type);
            }
            this.type = type;
            return this;
        }

        /** A bucket closes once its tensors reach this many bytes (default 4 MiB). */
        public Builder bucketBytes(long bucketBytes) {
            if (bucketBytes < 1) {
                throw new IllegalArgumentException("bucketBytes must be >= 1: " + bucketBytes);
            }
            this.bucketBytes = bucketBytes;
            return this;
        }

        /** How long {@link #step()} waits for each exchange (default: the communicator's timeout). */
        public Builder timeout(Duration timeout) {
            this.timeoutNanos = timeout.toNanos();
            return this;
        }

        /** The optimizer; allocates the flat buffers (zeroed). Every rank builds it with the same tensors. */
        public ShardedOptimizer build() {
            if (optimizer == null) {
                throw new IllegalStateException("no optimizer given");
            }
            if (counts.isEmpty()) {
                throw new IllegalStateException("no tensor added");
            }
            return new ShardedOptimizer(this);
        }
    }

    /** The number of tensors. */
    public int tensors() {
        return tensorCount.length;
    }

    /** The number of buckets the tensors were grouped into. */
    public int buckets() {
        return block.length;
    }

    /** Tensor {@code t}'s parameters: a view of the flat buffer, written by {@link #step()}'s all-gather. */
    public MemorySegment parameters(int t) {
        return view(parameters, t);
    }

    /** Tensor {@code t}'s gradient: a view the model writes before {@link #markReady}; unspecified after step(). */
    public MemorySegment gradient(int t) {
        return view(gradients, t);
    }

    private MemorySegment view(MemorySegment flat, int t) {
        Objects.checkIndex(t, tensorCount.length);
        return flat.asSlice(tensorOffset[t] * elementBytes, tensorCount[t] * elementBytes);
    }

    /** Sets every gradient to zero (for models that accumulate into their gradients). */
    public void zeroGradients() {
        ensureOpen();
        gradients.fill((byte) 0);
    }

    /**
     * Says that tensor {@code t}'s gradient is final for this step; when that completes a bucket
     * (and every bucket before it), their exchange starts. Optional: {@link #step()} starts what is
     * left, so a model may skip it and lose only the overlap.
     */
    public void markReady(int t) {
        ensureOpen();
        Objects.checkIndex(t, marked.length);
        if (marked[t]) {
            throw new IllegalStateException("tensor " + t + " marked ready twice in step " + (steps + 1));
        }
        marked[t] = true;
        unmarkedInBucket[bucketOf[t]]--;
        while (nextBucket < block.length && unmarkedInBucket[nextBucket] == 0) {
            issue(nextBucket++);
        }
    }

    private void issue(int k) {
        MemorySegment bucket = bucket(gradients, k);
        if (stage == Stage.GRADIENTS) {
            inFlight.add(comm.reduceScatterAsync(bucket, ownBlock(bucket, k), block[k], type, ReduceOp.AVG));
        } else {
            inFlight.add(comm.allReduceAsync(bucket, bucket, block[k] * comm.size(), type, ReduceOp.AVG));
        }
    }

    /** Bucket k of a flat buffer, padding included. */
    private MemorySegment bucket(MemorySegment flat, int k) {
        return flat.asSlice(bucketStart[k] * elementBytes, block[k] * comm.size() * elementBytes);
    }

    /** This rank's block of bucket k (a slice of {@link #bucket}). */
    private MemorySegment ownBlock(MemorySegment bucket, int k) {
        return bucket.asSlice(comm.rank() * block[k] * elementBytes, block[k] * elementBytes);
    }

    /**
     * Finishes the step: starts the exchange of the buckets not yet started, waits for all, applies the
     * optimizer to this rank's blocks, and all-gathers the parameters, so that every rank's
     * {@link #parameters(int)} hold the updated model when it returns.
     *
     * @throws CollectiveException when an exchange fails or takes longer than the timeout (the
     *     parameters are then partly updated and the job should stop or restart from a checkpoint)
     */
    public void step() {
        ensureOpen();
        for (int t = 0; t < marked.length; t++) {
            if (!marked[t]) {
                markReady(t);
            }
        }
        awaitInFlight("averaging the gradients");
        steps++;
        int r = comm.rank();
        for (int k = 0; k < block.length; k++) {
            long first = r * block[k];
            int real = (int) Math.max(0, Math.min(block[k], bucketLength[k] - first));
            if (real == 0) {
                continue; // this rank's block of the bucket is all padding
            }
            long at = bucketStart[k] + first;
            read(parameters, at, scratchParameters, real);
            read(gradients, at, scratchGradients, real);
            apply(optimizer, scratchParameters, scratchGradients, real, state, stateStart[k], steps);
            write(scratchParameters, parameters, at, real);
        }
        for (int k = 0; k < block.length; k++) {
            MemorySegment bucket = bucket(parameters, k);
            inFlight.add(comm.allGatherAsync(ownBlock(bucket, k), bucket, block[k], type));
        }
        awaitInFlight("gathering the parameters");
        Arrays.fill(marked, false);
        System.arraycopy(bucketTensors, 0, unmarkedInBucket, 0, bucketTensors.length);
        nextBucket = 0;
    }

    /** {@code count} elements from element {@code at} of a flat buffer into {@code into}, as doubles. */
    private void read(MemorySegment flat, long at, double[] into, int count) {
        if (type == DataType.FLOAT64) {
            MemorySegment.copy(flat, ValueLayout.JAVA_DOUBLE, at * Double.BYTES, into, 0, count);
        } else {
            for (int i = 0; i < count; i++) {
                into[i] = flat.getAtIndex(ValueLayout.JAVA_FLOAT, at + i);
            }
        }
    }

    /** The inverse of {@link #read}, rounding to float32 where the buffer is float32. */
    private void write(double[] from, MemorySegment flat, long at, int count) {
        if (type == DataType.FLOAT64) {
            MemorySegment.copy(from, 0, flat, ValueLayout.JAVA_DOUBLE, at * Double.BYTES, count);
        } else {
            for (int i = 0; i < count; i++) {
                flat.setAtIndex(ValueLayout.JAVA_FLOAT, at + i, (float) from[i]);
            }
        }
    }

    private void awaitInFlight(String what) {
        long deadline = System.nanoTime() + timeoutNanos;
        try {
            for (CompletableFuture<Void> f : inFlight) {
                try {
                    f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (ExecutionException e) {
                    Throwable cause = e.getCause();
                    if (cause instanceof RuntimeException re) {
                        throw re;
                    }
                    throw new CollectiveException("rank " + comm.rank() + ": " + what + " failed", cause);
                } catch (TimeoutException e) {
                    throw new CollectiveTimeoutException("rank " + comm.rank() + ": " + what + " took longer than "
                            + Duration.ofNanos(timeoutNanos));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new CollectiveException("rank " + comm.rank() + ": interrupted while " + what, e);
                }
            }
        } finally {
            inFlight.clear();
        }
    }

    private static void apply(Optimizer o, double[] p, double[] g, int count, double[][] state, int at, long step) {
        switch (o) {
            case Optimizer.Sgd s when s.momentum() == 0 -> {
                for (int i = 0; i < count; i++) {
                    p[i] -= s.learningRate() * g[i];
                }
            }
            case Optimizer.Sgd s -> {
                double[] v = state[0];
                for (int i = 0; i < count; i++) {
                    double vi = s.momentum() * v[at + i] + g[i];
                    v[at + i] = vi;
                    p[i] -= s.learningRate() * vi;
                }
            }
            case Optimizer.Adam a -> {
                double[] m = state[0];
                double[] v = state[1];
                double c1 = 1 - Math.pow(a.beta1(), step);
                double c2 = 1 - Math.pow(a.beta2(), step);
                for (int i = 0; i < count; i++) {
                    double mi = a.beta1() * m[at + i] + (1 - a.beta1()) * g[i];
                    double vi = a.beta2() * v[at + i] + (1 - a.beta2()) * g[i] * g[i];
                    m[at + i] = mi;
                    v[at + i] = vi;
                    p[i] -= a.learningRate() * (mi / c1) / (Math.sqrt(vi / c2) + a.epsilon());
                }
            }
        }
    }

    /** Copies rank {@code root}'s parameters to every rank (collective; for the initial model). */
    public void broadcastParameters(int root) {
        ensureOpen();
        if (!inFlight.isEmpty() || nextBucket > 0) {
            throw new IllegalStateException("broadcastParameters during a step (after markReady, before step())");
        }
        comm.broadcast(parameters, parameters.byteSize() / elementBytes, type, root);
    }

    /** The parameters this rank updates (its blocks' real elements and padding). */
    public long ownedParameters() {
        return owned;
    }

    /** Bytes of optimizer state this rank keeps (float64 values). */
    public long optimizerStateBytes() {
        return (long) optimizer.stateSlots() * owned * Double.BYTES;
    }

    /** Bytes of optimizer state one rank would keep unsharded: every parameter's. */
    public long unshardedStateBytes() {
        long total = 0;
        for (long c : tensorCount) {
            total += c;
        }
        return optimizer.stateSlots() * total * Double.BYTES;
    }

    /** Steps taken so far. */
    public long steps() {
        return steps;
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("the sharded optimizer is closed");
        }
    }

    /** Frees the flat buffers (once); the views become unusable. Waits for nothing: call it between steps. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        comm.free(parameters);
        comm.free(gradients);
    }
}
