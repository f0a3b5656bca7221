package dev.panamax.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.Trainer;
import ai.djl.training.listener.TrainingListenerAdapter;
import ai.djl.util.Pair;
import dev.panamax.collectives.Communicator;
import dev.panamax.ml.GradientSynchronizer;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.ml.SyncPolicy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Data-parallel training of a DJL model over a Panamax {@link Communicator}: a {@code TrainingListener} that
 * averages every parameter's gradient over the ranks after back-propagation and before {@code trainer.step()}.
 *
 * <pre>{@code
 * DataParallelTraining dp = DataParallelTraining.over(comm);
 * TrainingConfig config = new DefaultTrainingConfig(loss).optOptimizer(sgd).addTrainingListeners(dp);
 * try (Trainer trainer = model.newTrainer(config)) {
 *     dp.initialize(trainer, new Shape(batchPerRank, 784));  // trainer.initialize, then rank 0's parameters
 *     EasyTrain.fit(trainer, epochs, thisRanksShard, null);   // or trainBatch + step in a loop
 * }
 * }</pre>
 *
 * <p>The gradients go through a {@link GradientSynchronizer}, so consecutive small gradients are fused into one
 * all-reduce where its cost model says so and two all-reduces run at once where that pays. DJL calls
 * {@code onTrainingBatch} once the whole backward pass has run (the PyTorch engine runs it as one native call and
 * exposes no per-parameter hook), so communication cannot overlap back-propagation here: the all-reduces overlap
 * each other only. They run on the gradients' own memory: on CPU a contiguous gradient is mapped as a
 * {@link MemorySegment} without a copy (proved once per gradient by writing through the segment and reading the
 * tensor, and its address checked at every step); any other gradient is copied into a native buffer and back,
 * and {@link #stats()} counts both.
 *
 * <p>Every rank must pass the same batch size for the average over ranks to be the global batch's mean. A
 * failed all-reduce (a dead or aborted peer, a timeout) is thrown from the training step as a
 * {@link DataParallelException} naming this rank and the cause. While training runs, the listener's thread owns
 * the communicator; {@link #close} (also called at the end of training) frees what it holds and leaves the
 * communicator open.
 *
 * <p><b>Elastic mode</b> ({@link #elastic}): a failed exchange is not thrown; the survivors shrink to a communicator
 * of their own ({@link Communicator#shrink}), agree on the most advanced rank (a rank can have completed the step
 * in which another failed, never more), take its parameters by broadcast, zero their gradients (so the
 * {@code trainer.step()} that follows changes nothing with plain SGD) and go on averaging over the survivors. Drive
 * the loop by {@link #step()} rather than a counter of your own ({@code while (dp.step() < steps)}, batch
 * {@code dp.step()}), since a rank may skip the step it failed in, and shard the data by
 * {@link #communicator()}'s rank and size. The optimizer's own state (momentum, Adam's moments) stays inside DJL
 * and is not handed over: ranks may then differ in it by one step.
 */
public final class DataParallelTraining extends TrainingListenerAdapter implements AutoCloseable {
    private final Communicator given;
    private final boolean elastic;
    private Communicator comm;
    private final List<Recovery> recoveries = new ArrayList<>();
    private final SyncPolicy policy;
    /** For tests: treat every gradient as one the engine only hands out as a copy. */
    private final boolean copyAll;
    private final Arena copies = Arena.ofShared();
    private final List<Slot> slots = new ArrayList<>();
    private GradientSynchronizer sync;
    private boolean parametersShared;
    private boolean closed;
    private long steps;
    private long copiedBytes;
    private long syncNanos;

    /** A parameter's gradient as the synchronizer sees it: its own memory, or a copy buffer. */
    private record Slot(String name, Parameter parameter, MemorySegment segment, boolean zeroCopy) {
    }

    /** What the data-parallel steps did on this rank so far. */
    public record Stats(int zeroCopyGradients, int copiedGradients, long steps, long copiedBytes, long syncNanos) {
        /** The mean time of a step's gradient exchange (from the first gradient marked to the last reduced). */
        public double meanSyncMillis() {
            return steps == 0 ? 0 : syncNanos / 1e6 / steps;
        }
    }

    /** One recovery of the elastic mode: at step {@code step}, from {@code fromSize} to {@code toSize} ranks. */
    public record Recovery(long step, int fromSize, int toSize, double seconds) {
    }

    private DataParallelTraining(Communicator comm, SyncPolicy policy, boolean copyAll) {
        this(comm, policy, copyAll, false);
    }

    private DataParallelTraining(Communicator comm, SyncPolicy policy, boolean copyAll, boolean elastic) {
        this.given = Objects.requireNonNull(comm, "comm");
        this.comm = comm;
        this.elastic = elastic;
        this.policy = Objects.requireNonNull(policy, "policy");
        this.copyAll = copyAll;
    }

    /** Data-parallel training over {@code comm}, with the synchronizer's default policy (ASC-WFBP). */
    public static DataParallelTraining over(Communicator comm) {
        return new DataParallelTraining(comm, SyncPolicy.ASC_WFBP, false);
    }

    /** Data-parallel training over {@code comm}, scheduling the all-reduces by {@code policy}. */
    public static DataParallelTraining over(Communicator comm, SyncPolicy policy) {
        return new DataParallelTraining(comm, policy, false);
    }

    /**
     * Elastic data-parallel training over {@code comm} (see the class comment): a lost rank shrinks the training
     * to the survivors instead of failing it.
     */
    public static DataParallelTraining elastic(Communicator comm, SyncPolicy policy) {
        return new DataParallelTraining(comm, policy, false, true);
    }

    /** The communicator the training runs on now: the one given, or the survivors' after a recovery. */
    public Communicator communicator() {
        return comm;
    }

    /** The training steps completed: the index of the batch to train next (elastic mode may skip one). */
    public long step() {
        return steps;
    }

    /** The recoveries of the elastic mode so far. */
    public List<Recovery> recoveries() {
        return List.copyOf(recoveries);
    }

    /** For tests: every gradient goes through a copy buffer, as one the engine cannot expose would. */
    static DataParallelTraining copyingEveryGradient(Communicator comm) {
        return new DataParallelTraining(comm, SyncPolicy.ASC_WFBP, true);
    }

    /** {@code trainer.initialize(inputShapes)}, then {@link #broadcastParameters}: every rank starts equal. */
    public void initialize(Trainer trainer, Shape... inputShapes) {
        trainer.initialize(inputShapes);
        broadcastParameters(trainer);
    }

    /**
     * Overwrites every parameter with rank 0's (collective: every rank calls it, with the same model). Call it
     * after the parameters are initialized and before the first training batch.
     */
    public void broadcastParameters(Trainer trainer) {
        ensureOpen();
        if (sync != null) {
            throw new IllegalStateException("broadcastParameters after training started");
        }
        broadcastParameters(trainer, 0);
    }

    private void broadcastParameters(Trainer trainer, int root) {
        checkOneDevice(trainer);
        for (Pair<String, Parameter> p : trainer.getModel().getBlock().getParameters()) {
            NDArray value = p.getValue().getArray();
            checkFloat32(p.getKey(), value);
            MemorySegment own = TensorMemory.view(value);
            if (own != null) {
                comm.broadcast(own, value.size(), DataType.FLOAT32, root);
                continue;
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment copy = arena.allocate(value.size() * Float.BYTES, 64);
                MemorySegment.copy(MemorySegment.ofBuffer(value.toByteBuffer()), 0, copy, 0, copy.byteSize());
                comm.broadcast(copy, value.size(), DataType.FLOAT32, root);
                value.set(copy.asByteBuffer().order(ByteOrder.nativeOrder()));
                copiedBytes += 2 * copy.byteSize();
            }
        }
        parametersShared = true;
    }

    /** After back-propagation, before the optimizer step: averages the gradients over the ranks. */
    @Override
    public void onTrainingBatch(Trainer trainer, BatchData batchData) {
        ensureOpen();
        if (!parametersShared) {
            throw new IllegalStateException("rank " + comm.rank() + ": the parameters were not broadcast before "
                    + "the first training batch; call DataParallelTraining.initialize(trainer, shapes) (or "
                    + "broadcastParameters after trainer.initialize) so that every rank starts from rank 0's");
        }
        if (sync == null) {
            register(trainer);
        }
        long start = System.nanoTime();
        try {
            for (int i = 0; i < slots.size(); i++) {
                Slot s = slots.get(i);
                NDArray gradient = s.parameter().getArray().getGradient();
                if (s.zeroCopy()) {
                    long now = TensorMemory.address(gradient);
                    if (now != s.segment().address()) {
                        throw new IllegalStateException("rank " + comm.rank() + ": the gradient of " + s.name()
                                + " moved (0x" + Long.toHexString(s.segment().address()) + " -> 0x"
                                + Long.toHexString(now) + "); its all-reduce runs on the memory registered first");
                    }
                } else {
                    MemorySegment.copy(MemorySegment.ofBuffer(gradient.toByteBuffer()), 0, s.segment(), 0,
                            s.segment().byteSize());
                    copiedBytes += s.segment().byteSize();
                }
                sync.markReady(i);
            }
            sync.awaitAll();
        } catch (RuntimeException e) {
            if (!elastic) {
                throw new DataParallelException(comm.rank(), e);
            }
            recover(trainer, e);
            return;
        }
        for (Slot s : slots) {
            if (!s.zeroCopy()) {
                s.parameter().getArray().getGradient().set(s.segment().asByteBuffer().order(ByteOrder.nativeOrder()));
                copiedBytes += s.segment().byteSize();
            }
        }
        syncNanos += System.nanoTime() - start;
        steps++;
    }

    /**
     * Shrinks to the survivors (again while more ranks fail), takes the parameters of the lowest rank among those
     * that completed the most steps, and zeroes this rank's gradients for the step that follows.
     */
    private void recover(Trainer trainer, RuntimeException cause) {
        long start = System.nanoTime();
        int from = comm.size();
        sync.close();
        sync = null;
        slots.clear();
        RuntimeException last = cause;
        for (int attempt = 0; attempt < 5; attempt++) {
            try {
                Communicator next = comm.shrink();
                if (comm != given) {
                    comm.close();
                }
                comm = next;
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment v = arena.allocate(8, 8);
                    v.set(ValueLayout.JAVA_LONG, 0, steps);
                    comm.allReduce(v, 1, DataType.INT64, ReduceOp.MAX);
                    long most = v.get(ValueLayout.JAVA_LONG, 0);
                    v.set(ValueLayout.JAVA_LONG, 0, steps == most ? comm.rank() : comm.size());
                    comm.allReduce(v, 1, DataType.INT64, ReduceOp.MIN);
                    int owner = (int) v.get(ValueLayout.JAVA_LONG, 0);
                    broadcastParameters(trainer, owner);
                    steps = most;
                }
                for (Pair<String, Parameter> p : trainer.getModel().getBlock().getParameters()) {
                    if (p.getValue().requiresGradient()) {
                        NDArray g = p.getValue().getArray().getGradient();
                        g.muli(0);
                    }
                }
                recoveries.add(new Recovery(steps, from, comm.size(), (System.nanoTime() - start) / 1e9));
                return;
            } catch (RuntimeException e) {
                e.addSuppressed(last);
                last = e;
            }
        }
        throw new DataParallelException(comm.rank(), last);
    }

    /** Registers every trainable parameter's gradient, last layer first (the order back-propagation makes them). */
    private void register(Trainer trainer) {
        checkOneDevice(trainer);
        List<Pair<String, Parameter>> parameters = new ArrayList<>();
        for (Pair<String, Parameter> p : trainer.getModel().getBlock().getParameters()) {
            if (p.getValue().requiresGradient()) {
                parameters.add(p);
            }
        }
        GradientSynchronizer s = GradientSynchronizer.builder(comm).policy(policy).build();
        try {
            for (int i = parameters.size() - 1; i >= 0; i--) {
                String name = parameters.get(i).getKey();
                Parameter parameter = parameters.get(i).getValue();
                NDArray gradient = parameter.getArray().getGradient();
                checkFloat32(name + "'s gradient", gradient);
                MemorySegment own = copyAll ? null : TensorMemory.view(gradient);
                MemorySegment segment = own != null ? own
                        : copies.allocate(Math.max(1, gradient.size()) * Float.BYTES, 64)
                                .asSlice(0, gradient.size() * Float.BYTES);
                s.register(segment, gradient.size(), DataType.FLOAT32);
                slots.add(new Slot(name, parameter, segment, own != null));
            }
        } catch (RuntimeException e) {
            s.close();
            slots.clear();
            throw e;
        }
        sync = s;
    }

    /** Ends the synchronizer with the training. */
    @Override
    public void onTrainingEnd(Trainer trainer) {
        close();
    }

    /** This rank's counts so far. */
    public Stats stats() {
        int zero = 0;
        for (Slot s : slots) {
            zero += s.zeroCopy() ? 1 : 0;
        }
        return new Stats(zero, slots.size() - zero, steps, copiedBytes, syncNanos);
    }

    /**
     * Stops the synchronizer's thread and frees the copy buffers; the given communicator stays open (one a
     * recovery made is closed). Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (sync != null) {
                sync.close();
            }
            if (comm != given) {
                comm.close(); // the survivors' communicator of a recovery
            }
        } finally {
            copies.close();
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("data-parallel training was closed (training ended)");
        }
    }

    private void checkOneDevice(Trainer trainer) {
        Device[] devices = trainer.getDevices();
        if (devices.length != 1) {
            throw new IllegalArgumentException("data-parallel training over Panamax takes one device per rank, "
                    + "the trainer has " + devices.length + "; run one rank per device");
        }
    }

    private static void checkFloat32(String what, NDArray array) {
        if (!array.getDataType().isFloating() || array.getDataType().getNumOfBytes() != Float.BYTES) {
            throw new IllegalArgumentException(what + " is " + array.getDataType() + "; data-parallel training "
                    + "averages float32 tensors");
        }
    }
}
