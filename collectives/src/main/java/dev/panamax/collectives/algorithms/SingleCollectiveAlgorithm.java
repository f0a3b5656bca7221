package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.Collective;

import dev.panamax.collectives.schedule.Problem;

/** An algorithm for one collective only, on any rank count. */
abstract class SingleCollectiveAlgorithm implements Algorithm {
    private final String name;
    private final Collective collective;

    SingleCollectiveAlgorithm(String name, Collective collective) {
        this.name = name;
        this.collective = collective;
    }

    @Override
    public final String name() {
        return name;
    }

    @Override
    public String unsupported(Problem p) {
        return p.collective() == collective ? null : name + " has only " + collective.label();
    }
}
