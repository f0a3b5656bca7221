package dev.panamax.collectives.plan;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.algorithms.Algorithm;
import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.algorithms.Costs;
import dev.panamax.collectives.algorithms.Prediction;
import dev.panamax.collectives.internal.config.Settings;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Stage;
import dev.panamax.collectives.schedule.Step;

import java.util.Objects;
import java.util.stream.IntStream;

/**
 * The live cost model the planner ranks algorithms by: each algorithm's own prediction of its
 * network time ({@link Algorithm#predict}, the alpha-beta models of [BlueConnect] applied to the
 * stages its schedule runs; see {@code docs/guide/algorithms.md} for the formulas) plus a
 * reduction-compute term read off the schedule. The papers' formulas as published, kept to check
 * the model against, are {@link PaperFormulas}.
 *
 * <p>Units: sizes in bytes, times in seconds, bandwidths in bytes per second.
 */
public final class CostModel {
    /** The default of {@link #reduceBytesPerSecond()}. */
    public static final double DEFAULT_REDUCE_BYTES_PER_SECOND =
            Double.parseDouble(Settings.REDUCE_BYTES_PER_SECOND.defaultValue());

    private CostModel() {
    }

    /** {@link #predict(Algorithm, Problem)} of the registered algorithm called {@code algorithm}. */
    public static Prediction predict(String algorithm, Problem p) {
        Objects.requireNonNull(algorithm, "algorithm");
        return predict(Algorithms.get(algorithm), p);
    }

    /**
     * The predicted time of {@code algorithm} on {@code p} (all ranks; the rank field is ignored):
     * its network time plus the time to reduce what the busiest rank folds.
     *
     * @throws IllegalArgumentException when the algorithm cannot run {@code p} or has no cost model
     *     for its collective
     */
    public static Prediction predict(Algorithm algorithm, Problem p) {
        Objects.requireNonNull(algorithm, "algorithm");
        Objects.requireNonNull(p, "problem");
        String why = algorithm.unsupported(p);
        if (why != null) {
            throw new IllegalArgumentException(why);
        }
        Prediction wire = algorithm.predict(p);
        if (wire == null) {
            throw new IllegalArgumentException("no cost model for " + algorithm.name() + " " + p.collective().label());
        }
        if (p.size() == 1 || (p.count() == 0 && p.collective() != Collective.BARRIER)) {
            return Prediction.zero(p.size() == 1 ? "one rank: local copy" : "empty vector");
        }
        double reduced = reducedBytes(algorithm, p);
        if (reduced == 0) {
            return wire;
        }
        double compute = reduced / reduceBytesPerSecond();
        return new Prediction(wire.seconds() + compute, wire.formula() + " + R " + Costs.bytes(reduced) + "/"
                + Costs.bw(reduceBytesPerSecond()), wire.bytesPerRank());
    }

    /** True when {@code algorithm} can run {@code p} and has a cost model for it (the planner weighs it). */
    public static boolean hasModel(Algorithm algorithm, Problem p) {
        return algorithm.unsupported(p) == null && algorithm.predict(p) != null;
    }

    /**
     * Bytes the reduction kernels produce, per second, on one core: the compute term {@code R} of
     * the predictions (the papers' models leave arithmetic out; on shared memory it is of the same
     * order as the transfers and decides, for instance, between a butterfly that folds the whole
     * vector at every rank and a ring that folds 1/n of it). 10 GB/s unless the system property
     * {@code panamax.model.reduceBytesPerSecond} says otherwise.
     */
    public static double reduceBytesPerSecond() {
        String v = Settings.REDUCE_BYTES_PER_SECOND.value();
        if (v != null) {
            try {
                double d = Double.parseDouble(v);
                if (d > 0) {
                    return d;
                }
            } catch (NumberFormatException ignored) {
                // fall through to the default
            }
        }
        return DEFAULT_REDUCE_BYTES_PER_SECOND;
    }

    /**
     * The bytes that the busiest of ranks 0, n-1 and the root folds (recv-reduce and local reduce
     * steps of their schedules): the compute part of the critical path. For reduce-scatter and
     * all-gather local copies count too, at the same rate: the hierarchical algorithms copy the
     * whole n-block buffer to put the blocks in their levels' order, which on shared memory costs
     * as much as a transfer (all-reduce schedules copy at most a rank's own input once).
     */
    static double reducedBytes(Algorithm algorithm, Problem p) {
        Collective c = p.collective();
        boolean copies = c == Collective.REDUCE_SCATTER || c == Collective.ALL_GATHER;
        if (c != Collective.ALL_REDUCE && c != Collective.REDUCE && !copies) {
            return 0;
        }
        long most = 0;
        for (int r : IntStream.of(0, p.size() - 1, p.root()).distinct().toArray()) {
            long e = 0;
            for (Stage st : algorithm.build(p.atRank(r)).stages()) {
                for (Step s : st.steps()) {
                    if (s instanceof Step.Recv rv && rv.with() != null) {
                        e += rv.dst().count();
                    } else if (s instanceof Step.Reduce rd) {
                        e += rd.dst().count();
                    } else if (copies && s instanceof Step.Copy cp) {
                        e += cp.dst().count();
                    }
                }
            }
            most = Math.max(most, e);
        }
        return (double) most * p.elementBytes();
    }
}
