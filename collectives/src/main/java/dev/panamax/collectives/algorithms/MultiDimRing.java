package dev.panamax.collectives.algorithms;

/**
 * Multi-dimensional ring all-reduce (PowerAI DDL, paper 001): the ranks form a box d1 * ... * dm
 * (the topology's levels) and the all-reduce runs a ring reduce-scatter along each dimension in
 * turn, each on the part the previous dimensions left, then the ring all-gathers in reverse. Only
 * the first dimension carries the whole vector, so the slow outer links see 1/(d1...d_{i-1}) of it.
 */
public final class MultiDimRing extends Hierarchical {
    @Override
    public String name() {
        return "mdring";
    }

    @Override
    Kind levelKind(dev.panamax.collectives.Topology t, int fanout) {
        return Kind.RING;
    }
}
