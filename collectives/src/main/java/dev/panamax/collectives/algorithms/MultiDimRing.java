package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.Topology;

/**
 * Multi-dimensional ring all-reduce ([PowerAI-DDL]): the ranks form a box d1 * ... * dm
 * (the topology's levels) and the all-reduce runs a ring reduce-scatter along each dimension in
 * turn, each on the part the previous dimensions left, then the ring all-gathers in reverse. Only
 * the first dimension carries the whole vector, so the slow outer links see 1/(d1...d_{i-1}) of it.
 */
public final class MultiDimRing extends Hierarchical {
    /** The name this algorithm is selected by ({@code -a mdring}). */
    public static final String NAME = "mdring";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    Kind levelKind(Topology t, int fanout) {
        return Kind.RING;
    }

    @Override
    String equation(int activeLevels) {
        return "(eq. 9 with T_r at every level)";
    }
}
