package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.Simulator;

/**
 * A collective algorithm: builds, for one rank, the {@link Schedule} of stages that rank runs. The
 * same executor runs every schedule over any transport, and the {@link Simulator} checks it. A
 * new algorithm is one class implementing this interface, registered with {@code dev.panamax.collectives.algorithms.Algorithms.register}.
 */
public interface Algorithm {

    /** The name used by {@code -a} and {@code Communicator.setAlgorithm}: {@code ring}, {@code rhd}, ... */
    String name();

    /** Null when this algorithm can run {@code problem}; otherwise why not, in a sentence. */
    String unsupported(Problem problem);

    /** The schedule of {@code problem.rank()}; only called when {@link #unsupported} returned null. */
    Schedule build(Problem problem);
}
