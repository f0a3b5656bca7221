package dev.panamax.collectives.plan;

import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.schedule.Algorithm;
import dev.panamax.collectives.schedule.Problem;

/** Chooses the algorithm for {@code -a auto}. */
public final class Planner {
    private Planner() {
    }

    /**
     * The algorithm (and the topology it runs on) for {@code problem}. Deterministic: every rank
     * must get the same answer for the same problem.
     */
    public static Candidate choose(Problem problem) {
        return new Candidate(heuristic(problem).name(), problem.topology(), Double.NaN, "size thresholds");
    }

    private static Algorithm heuristic(Problem problem) {
        int n = problem.size();
        long bytes = problem.byteSize();
        boolean pow2 = n > 2 && Integer.bitCount(n) == 1;
        return switch (problem.collective()) {
            case ALL_REDUCE -> {
                if (bytes * (n - 1) <= 32 * 1024) {
                    yield Algorithms.get(pow2 ? "butterfly" : "direct");
                }
                yield Algorithms.get(pow2 && bytes <= (4 << 20) ? "rhd" : "ring");
            }
            case ALL_TO_ALL -> Algorithms.get("pairwise");
            case BARRIER -> Algorithms.get("dissemination");
            default -> Algorithms.get("ring");
        };
    }
}
