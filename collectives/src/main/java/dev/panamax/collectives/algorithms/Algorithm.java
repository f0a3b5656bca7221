package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.Simulator;

/**
 * A collective algorithm: builds, for one rank, the {@link Schedule} of stages that rank runs, and
 * predicts its own time. The same executor runs every schedule over any transport, and the
 * {@link Simulator} checks it. A new algorithm is one class implementing this interface,
 * registered with {@link Algorithms#register}; with a {@link #predict} it is a candidate for
 * {@code auto} like the built-in ones.
 */
public interface Algorithm {

    /** The name used by {@code -a} and {@code Communicator.setAlgorithm}: {@code ring}, {@code rhd}, ... */
    String name();

    /** Null when this algorithm can run {@code problem}; otherwise why not, in a sentence. */
    String unsupported(Problem problem);

    /** The schedule of {@code problem.rank()}; only called when {@link #unsupported} returned null. */
    Schedule build(Problem problem);

    /**
     * The predicted time of the whole collective (all ranks; the rank field is ignored) on the
     * network of {@code problem.topology()}, following the stages the schedule really runs, or
     * null when this algorithm has no cost model for the problem's collective (then the planner
     * never chooses it). Arithmetic is not counted: the planner adds the reduction time from the
     * schedule. Only called when {@link #unsupported} returned null; the planner does not use the
     * answer for one rank or an empty vector (those cost nothing), but it must not fail there.
     * {@link Costs} and {@link Network} hold the shared formulas.
     */
    default Prediction predict(Problem problem) {
        return null;
    }

    /**
     * Whether the schedule follows the topology's levels (a hierarchical algorithm): the planner
     * then weighs it on every factorization of the topology, not only the one given.
     */
    default boolean followsTopology() {
        return false;
    }
}
