package dev.panamax.lightgbm;

import dev.panamax.collectives.Agreement;
import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.MismatchedCallException;
import dev.panamax.lightgbm.PanamaxLightGbm.Checkpoint;
import dev.panamax.lightgbm.PanamaxLightGbm.IterationListener;
import dev.panamax.lightgbm.PanamaxLightGbm.LocalData;
import dev.panamax.memory.DataType;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Data-parallel LightGBM training that survives the loss of ranks: {@link PanamaxLightGbm#train} plus
 * recoveries.
 *
 * <pre>{@code
 * try (Communicator comm = Panamax.fromEnvironment()) {
 *     ElasticLightGbm.Result r = ElasticLightGbm.train(comm, "objective=binary", data, 100, 2, listener);
 *     try {
 *         save(r.model());                      // the same on every surviving rank
 *     } finally {
 *         if (r.communicator() != comm) {
 *             r.communicator().close();        // the survivors' communicator, made by a recovery
 *         }
 *     }
 * }
 * }</pre>
 */
public final class ElasticLightGbm {
    private ElasticLightGbm() {
    }

    /**
     * A recovery of {@link #train}: from {@code fromSize} to {@code toSize} ranks, training resumed after
     * {@code iteration} iterations; {@code lostRanks} in the numbering of the communicator they left;
     * {@code seconds} from the shrink's start to the checkpoint agreed on the new communicator.
     */
    public record Recovery(int iteration, int fromSize, int toSize, List<Integer> lostRanks, double seconds) {
        public Recovery {
            lostRanks = List.copyOf(lostRanks);
        }
    }

    /**
     * What {@link #train} ends with: the model, the same on every rank that returns, and the communicator
     * training ended on: {@code comm} itself, or the survivors' communicator made by the last recovery, which the
     * caller then owns and closes.
     */
    public record Result(String model, Communicator communicator, List<Recovery> recoveries) {
        public Result {
            Objects.requireNonNull(model, "model");
            Objects.requireNonNull(communicator, "communicator");
            recoveries = List.copyOf(recoveries);
        }
    }

    /** Flags of the agreement that ends each attempt of {@link #train}: this rank has the model. */
    private static final long TRAINED = 1;
    /** ... and nothing failed here that a recovery cannot mend. */
    private static final long RECOVERABLE = 2;

    /**
     * As {@link PanamaxLightGbm#train(Communicator, String, LocalData, int, IterationListener)}, surviving the loss
     * of ranks: when a rank dies (or a collective fails otherwise), the others shrink the communicator to the
     * survivors ({@link Communicator#shrink}), take the model of the most iterations that any survivor finished,
     * and go on training it over the survivors' rows (the lost ranks' rows leave the training), as LightGBM
     * continues a model: its raw scores are the rows' init scores and its trees come first. Without a failure the
     * model is the one {@code PanamaxLightGbm.train} gives; a recovery that resumes after k iterations gives the
     * model of those k iterations continued over the survivors. Up to {@code maxRecoveries} recoveries.
     *
     * <p>Each attempt ends with an {@link Communicator#agree agreement} on whether every rank finished, so that
     * all survivors return the same model or all recover: a rank that finished while another failed in the same
     * last collective recovers with it. Errors that a recovery cannot mend (LightGBM's own errors, inputs that do
     * not fit together, an exception of the listener) end the training on every rank: this rank throws its own,
     * the others an {@link IllegalStateException} saying so. The loss of rank 0, which hosts the rendezvous
     * store, fails every survivor (see {@link Communicator#shrink}). Training runs over Panamax only.
     *
     * @param maxRecoveries how many times to shrink before giving up (the failure is thrown then)
     * @param listener      called with the iteration counted from the first (a resumed training goes on
     *                      counting), on this rank's thread
     */
    public static Result train(Communicator comm, String params, LocalData data, int iterations,
            int maxRecoveries, IterationListener listener) {
        PanamaxLightGbm.checkArguments(comm, params, data, iterations, listener);
        if (maxRecoveries < 0) {
            throw new IllegalArgumentException("maxRecoveries must be >= 0: " + maxRecoveries);
        }
        PanamaxLightGbm.distributedParameters(params, comm.size());
        String anySize = withoutMachineCount(params);
        List<Recovery> recoveries = new ArrayList<>();
        Communicator current = comm;
        Checkpoint[] reached = {Checkpoint.NONE};
        Recovering recovering = null;
        int shrinks = 0;
        try {
            while (true) {
                String model = null;
                RuntimeException failure = null;
                try {
                    if (recovering != null) {
                        reached[0] = mostAdvanced(current, reached[0]);
                        recoveries.add(recovering.done(reached[0].iterations(), current.size()));
                        recovering = null;
                    }
                    boolean done = reached[0].model() != null && reached[0].iterations() >= iterations;
                    model = done ? reached[0].model() : attempt(current, anySize, data, iterations, listener, reached);
                } catch (RuntimeException e) {
                    failure = e;
                    current.revoke();
                }
                boolean recoverable = failure == null || recoverable(failure);
                Agreement agreed = agree(current, (model != null ? TRAINED : 0) | (recoverable ? RECOVERABLE : 0),
                        failure);
                if ((agreed.flags() & TRAINED) != 0) {
                    return new Result(model, current, recoveries);
                }
                if ((agreed.flags() & RECOVERABLE) == 0 && !recoverable) {
                    throw failure;
                }
                if ((agreed.flags() & RECOVERABLE) == 0) {
                    throw new IllegalStateException("LightGBM elastic training: another rank failed with an error "
                            + "that a recovery cannot mend", failure);
                }
                if (shrinks == maxRecoveries) {
                    if (failure != null) {
                        throw failure;
                    }
                    throw new IllegalStateException("LightGBM elastic training: another rank failed, after "
                            + maxRecoveries + " recoveries");
                }
                long start = System.nanoTime();
                Communicator survivors = current.shrink();
                shrinks++;
                recovering = new Recovering(current.size(), agreed.failedRanks(), start);
                if (current != comm) {
                    current.close();
                }
                current = survivors;
            }
        } catch (RuntimeException | Error e) {
            if (current != comm) {
                current.close();
            }
            throw e;
        }
    }

    /** A recovery between the start of its shrink and the checkpoint agreed on the new communicator. */
    private record Recovering(int fromSize, List<Integer> lostRanks, long startNanos) {
        Recovery done(int iteration, int toSize) {
            return new Recovery(iteration, fromSize, toSize, lostRanks, (System.nanoTime() - startNanos) / 1e9);
        }
    }

    /**
     * One attempt of elastic training on {@code comm}, from {@code reached[0]}, which it sets to what it reached
     * (also when it fails: the iterations it finished).
     */
    private static String attempt(Communicator comm, String anySizeParams, LocalData data, int iterations,
            IterationListener listener, Checkpoint[] reached) {
        String full = PanamaxLightGbm.distributedParameters(anySizeParams, comm.size());
        try (PanamaxLightGbm.Attempt attempt = new PanamaxLightGbm.Attempt(reached[0])) {
            String model;
            try {
                model = PanamaxLightGbm.run(attempt, comm, full, data, iterations, listener,
                        PanamaxLightGbm.Network.PANAMAX, true);
            } catch (RuntimeException e) {
                try {
                    reached[0] = attempt.reached();
                } catch (RuntimeException saving) {
                    e.addSuppressed(saving);
                }
                throw e;
            }
            reached[0] = new Checkpoint(model, attempt.iterations());
            return model;
        }
    }

    /**
     * Whether {@code e} is a failure of the communicator (a lost or frozen peer, a revoke), which shrink mends; a
     * mismatched call is a bug that a smaller communicator would repeat.
     */
    private static boolean recoverable(Throwable e) {
        Throwable c = e instanceof LightGbmNetworkException ? e.getCause() : e;
        return c instanceof CollectiveException && !(c instanceof MismatchedCallException);
    }

    /** {@link Communicator#agree}; if it fails, throws this rank's {@code failure} (when there is one) instead. */
    private static Agreement agree(Communicator comm, long flags, RuntimeException failure) {
        try {
            return comm.agree(flags);
        } catch (RuntimeException e) {
            if (failure == null) {
                throw e;
            }
            failure.addSuppressed(e);
            throw failure;
        }
    }

    /**
     * The checkpoint of the most iterations among the ranks of {@code comm} (each passes its own), sent by the
     * lowest rank that has it.
     */
    private static Checkpoint mostAdvanced(Communicator comm, Checkpoint mine) {
        int n = comm.size();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment all = arena.allocate(ValueLayout.JAVA_LONG, n);
            comm.allGather(arena.allocateFrom(ValueLayout.JAVA_LONG, mine.iterations()), all, 1, DataType.INT64);
            int root = 0;
            for (int r = 1; r < n; r++) {
                if (all.getAtIndex(ValueLayout.JAVA_LONG, r) > all.getAtIndex(ValueLayout.JAVA_LONG, root)) {
                    root = r;
                }
            }
            int best = (int) all.getAtIndex(ValueLayout.JAVA_LONG, root);
            if (best == 0) {
                return Checkpoint.NONE;
            }
            boolean sender = root == comm.rank();
            byte[] text = sender ? mine.model().getBytes(StandardCharsets.UTF_8) : null;
            MemorySegment length = arena.allocateFrom(ValueLayout.JAVA_LONG, sender ? text.length : 0);
            comm.broadcast(length, 1, DataType.INT64, root);
            long bytes = length.get(ValueLayout.JAVA_LONG, 0);
            MemorySegment buffer = arena.allocate(bytes);
            if (sender) {
                MemorySegment.copy(text, 0, buffer, ValueLayout.JAVA_BYTE, 0, text.length);
            }
            comm.broadcast(buffer, bytes, DataType.UINT8, root);
            return sender ? mine : new Checkpoint(new String(buffer.toArray(ValueLayout.JAVA_BYTE),
                    StandardCharsets.UTF_8), best);
        }
    }

    /** {@code params} without {@code num_machines}, which each attempt sets to its communicator's size. */
    static String withoutMachineCount(String params) {
        StringBuilder out = new StringBuilder();
        for (String token : params.trim().split("\\s+")) {
            String key = token.contains("=") ? token.substring(0, token.indexOf('=')).trim() : token;
            if (!key.equals("num_machines") && !key.equals("num_machine") && !token.isEmpty()) {
                out.append(out.isEmpty() ? "" : " ").append(token);
            }
        }
        return out.toString();
    }
}
