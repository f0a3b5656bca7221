package dev.panamax.ml;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Data-parallel training that survives the loss of ranks and takes in replacements: a
 * {@link GradientSynchronizer} on a communicator that {@link #recover} shrinks to the survivors
 * ({@link Communicator#shrink}) and {@link #grow} widens with joining processes
 * ({@link Communicator#grow}), with the model's state rolled back to the last step every rank
 * completed and handed over from rank 0.
 *
 * <p>Use: every rank builds it with the same gradients and state; each step back-propagates its
 * share of the global batch (by {@link #communicator()}'s rank and size, which change), calls
 * {@link #markReady} per gradient and {@link #awaitAll}, applies the optimizer to the state, and
 * calls {@link #commit}. When a step throws a {@link CollectiveException} (a rank died, or the
 * communicator was revoked), call {@link #recover}: the step is abandoned, the survivors shrink,
 * agree on the last step they all committed ({@link #step()}), and rank 0's state at that step
 * is broadcast into every rank's state; then go on from {@link #step()}. With averaged gradients
 * the synchronizer, rebuilt on the new communicator, divides by the new rank count; a global batch
 * split over the ranks keeps the global gradient, so the loss curve goes on as without the loss.
 *
 * <p>The state is every byte that defines the model (parameters and optimizer state) in one
 * segment; commit keeps a copy of the last two committed steps' state (ranks can be one step apart
 * when a rank dies, never more). A process that replaces a lost rank joins with
 * {@code Panamax.builder().join()} and builds this with {@link Builder#joined}: it receives the
 * state and the step from the ranks' {@link #grow}.
 */
public final class ElasticTraining implements AutoCloseable {
    private final Consumer<GradientSynchronizer.Builder> configure;
    private final List<MemorySegment> gradients;
    private final long[] counts;
    private final DataType type;
    private final MemorySegment state;
    private final int maxShrinks;
    private final Arena arena = Arena.ofShared();
    /** The state after {@link #committed} steps, and after one step fewer (valid once a step was committed). */
    private MemorySegment current;
    private MemorySegment previous;
    private boolean previousValid;
    /** The step count exchanged at a handover. */
    private final MemorySegment steps;
    private long committed;
    private final Communicator given;
    private Communicator comm;
    private GradientSynchronizer sync;
    private final List<Event> events = new ArrayList<>();

    /** What happened to the communicator: at step {@code step}, from {@code fromSize} to {@code toSize} ranks. */
    public record Event(String kind, long step, int fromSize, int toSize, double seconds) {
    }

    /** A builder on {@code comm}, which the training uses (and never closes). */
    public static Builder builder(Communicator comm) {
        return new Builder(comm);
    }

    /** Configures the gradients, the state and the synchronizer. */
    public static final class Builder {
        private final Communicator comm;
        private Consumer<GradientSynchronizer.Builder> configure = b -> {
        };
        private final List<MemorySegment> gradients = new ArrayList<>();
        private final List<Long> counts = new ArrayList<>();
        private DataType type;
        private MemorySegment state;
        private boolean joined;
        private int maxShrinks = 5;

        private Builder(Communicator comm) {
            this.comm = Objects.requireNonNull(comm, "comm");
        }

        /**
         * Configures each synchronizer (one per communicator): policy, model, compression. Called for
         * every new communicator, so create hooks inside it (a synchronizer closes its hook).
         */
        public Builder synchronizer(Consumer<GradientSynchronizer.Builder> configure) {
            this.configure = Objects.requireNonNull(configure, "configure");
            return this;
        }

        /** The next gradient tensor, in backward order ({@link GradientSynchronizer#register}); one type for all. */
        public Builder gradient(MemorySegment gradient, long count, DataType type) {
            Objects.requireNonNull(gradient, "gradient");
            if (this.type != null && this.type != type) {
                throw new IllegalArgumentException("gradient " + gradients.size() + " is " + type
                        + " but the others are " + this.type);
            }
            this.type = Objects.requireNonNull(type, "type");
            gradients.add(gradient);
            counts.add(count);
            return this;
        }

        /** The model's state: restored and handed over byte for byte; the same size on every rank. */
        public Builder state(MemorySegment state) {
            this.state = Objects.requireNonNull(state, "state");
            return this;
        }

        /** This process joined the job ({@code Panamax.builder().join()}): {@link #build} receives the state. */
        public Builder joined(boolean joined) {
            this.joined = joined;
            return this;
        }

        /** How many shrinks in a row {@link ElasticTraining#recover} tries while more ranks fail (default 5). */
        public Builder maxShrinks(int maxShrinks) {
            if (maxShrinks < 1) {
                throw new IllegalArgumentException("maxShrinks must be >= 1: " + maxShrinks);
            }
            this.maxShrinks = maxShrinks;
            return this;
        }

        /** Collective: the training, its synchronizer built; a joined process receives the state and step first. */
        public ElasticTraining build() {
            if (state == null) {
                throw new IllegalStateException("no state given");
            }
            ElasticTraining t = new ElasticTraining(this);
            try {
                t.handOver(joined);
            } catch (RuntimeException e) {
                t.close();
                throw e;
            }
            return t;
        }
    }

    private ElasticTraining(Builder b) {
        this.given = b.comm;
        this.comm = b.comm;
        this.configure = b.configure;
        this.gradients = List.copyOf(b.gradients);
        this.counts = b.counts.stream().mapToLong(Long::longValue).toArray();
        this.type = b.type;
        this.state = b.state;
        this.maxShrinks = b.maxShrinks;
        this.current = arena.allocate(state.byteSize(), 64);
        this.previous = arena.allocate(state.byteSize(), 64);
        this.steps = arena.allocate(8, 8);
        MemorySegment.copy(state, 0, current, 0, state.byteSize()); // step 0: the state as given
    }

    /** The communicator the training runs on now (its rank and size decide each rank's share). */
    public Communicator communicator() {
        return comm;
    }

    /** The steps committed so far: the index of the step to run next. */
    public long step() {
        return committed;
    }

    /** What recover and grow did so far. */
    public List<Event> events() {
        return List.copyOf(events);
    }

    /** {@link GradientSynchronizer#markReady} on the current synchronizer. */
    public void markReady(int index) {
        sync.markReady(index);
    }

    /** {@link GradientSynchronizer#awaitAll()} on the current synchronizer. */
    public void awaitAll() {
        sync.awaitAll();
    }

    /** The step's optimizer update is in the state: keeps a copy of it and counts the step. */
    public void commit() {
        MemorySegment older = previous;
        previous = current;
        previousValid = true;
        MemorySegment.copy(state, 0, older, 0, state.byteSize());
        current = older;
        committed++;
    }

    /**
     * After a step failed on this rank: shrinks to the survivors (again while more ranks fail, up to
     * the builder's limit), rolls back to the last step they all committed and hands rank 0's state
     * of that step to every rank. Collective over the survivors; returns the event.
     *
     * @throws CollectiveException when the survivors cannot agree or connect within the limit (for
     *                             example when the rendezvous store's host, rank 0 of the job, died)
     */
    public Event recover() {
        long start = System.nanoTime();
        int from = comm.size();
        closeSynchronizer();
        CollectiveException last = null;
        for (int attempt = 0; attempt < maxShrinks; attempt++) {
            Communicator next;
            try {
                next = comm.shrink();
            } catch (PeerFailedException e) {
                last = e; // one more rank went while the survivors connected: try again
                continue;
            }
            replace(next);
            try {
                handOver(false);
                Event e = new Event("shrink", committed, from, comm.size(), (System.nanoTime() - start) / 1e9);
                events.add(e);
                return e;
            } catch (CollectiveException e) {
                last = e;
                closeSynchronizer();
            }
        }
        throw new CollectiveException("rank " + comm.rank() + ": could not recover after " + maxShrinks
                + " shrinks", last);
    }

    /**
     * Widens the training by {@code newRanks} processes that join the job: collective over the current
     * ranks (the joiners build theirs with {@link Builder#joined}); rank 0's state and step are handed to
     * them. When it fails (no process joined in time), the training stays on the current communicator.
     */
    public Event grow(int newRanks) {
        long start = System.nanoTime();
        int from = comm.size();
        Communicator next = comm.grow(newRanks);
        closeSynchronizer();
        replace(next);
        handOver(false);
        Event e = new Event("grow", committed, from, comm.size(), (System.nanoTime() - start) / 1e9);
        events.add(e);
        return e;
    }

    /**
     * Brings every rank of {@link #comm} to the same step and state: the step is the least committed
     * step of the ranks (a joiner counts none), rank 0 restores its copy of that step (it keeps the last
     * two; ranks are at most one step apart) and broadcasts it into every rank's state; then the
     * synchronizer is built on {@link #comm}.
     */
    private void handOver(boolean joiner) {
        steps.set(ValueLayout.JAVA_LONG, 0, joiner ? Long.MAX_VALUE : committed);
        comm.allReduce(steps, 1, DataType.INT64, ReduceOp.MIN);
        long agreed = steps.get(ValueLayout.JAVA_LONG, 0);
        if (comm.rank() == 0) {
            if (agreed == committed) {
                MemorySegment.copy(current, 0, state, 0, state.byteSize());
            } else if (agreed == committed - 1 && previousValid) {
                MemorySegment.copy(previous, 0, state, 0, state.byteSize());
            } else {
                throw new IllegalStateException("rank 0 committed step " + committed + " but the ranks agreed on "
                        + agreed + ": more than one step apart");
            }
        }
        comm.broadcast(state, state.byteSize(), DataType.UINT8, 0);
        MemorySegment.copy(state, 0, current, 0, state.byteSize());
        previousValid = false;
        committed = agreed;
        GradientSynchronizer.Builder b = GradientSynchronizer.builder(comm);
        configure.accept(b);
        sync = b.build();
        for (int i = 0; i < gradients.size(); i++) {
            sync.register(gradients.get(i), counts[i], type);
        }
    }

    private void replace(Communicator next) {
        if (comm != given) {
            comm.close();
        }
        comm = next;
    }

    private void closeSynchronizer() {
        if (sync != null) {
            sync.close();
            sync = null;
        }
    }

    /** Closes the synchronizer and the communicators this training made (not the one it was given). */
    @Override
    public void close() {
        closeSynchronizer();
        if (comm != given) {
            comm.close();
        }
        arena.close();
    }
}
