package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.Topology;

/**
 * BlueConnect, from [BlueConnect]: all-reduce decomposed into one reduce-scatter and one all-gather stage
 * per network level of the topology, |P| = p0 * p1 * ... * pk, each level choosing recursive
 * halving/doubling when its fan-out is a power of two and the ring otherwise (eq. 3). On a
 * topology with no hierarchy (one level, e.g. a prime rank count) it is the one-level ring, as
 * the paper's section 3.4 says.
 */
public final class BlueConnect extends Hierarchical {
    /** The name this algorithm is selected by ({@code -a blueconnect}). */
    public static final String NAME = "blueconnect";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    Kind levelKind(Topology t, int fanout) {
        if (activeLevels(t).size() <= 1) {
            return Kind.RING; // no feasible decomposition: the one-level ring (section 3.4)
        }
        return Costs.isPowerOfTwo(fanout) ? Kind.RHD : Kind.RING;
    }

    @Override
    String describe(Topology t) {
        if (activeLevels(t).size() <= 1) {
            return name() + "(no hierarchy: one-level ring over " + t.size() + ")";
        }
        return super.describe(t);
    }

    @Override
    String equation(int activeLevels) {
        return activeLevels > 1 ? "(eq. 9)" : "(eq. 6: no hierarchy, one-level ring)";
    }
}
