package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.Collective;

import dev.panamax.collectives.schedule.Problem;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The registry of algorithms by name. {@code auto} is not an algorithm but the planner's choice
 * ({@link dev.panamax.collectives.plan.Planner}).
 */
public final class Algorithms {
    /** The name that asks the planner to choose. */
    public static final String AUTO = "auto";

    /** {@value Ring#NAME}: see {@link Ring}. */
    public static final String RING = Ring.NAME;
    /** {@value HalvingDoubling#NAME}: see {@link HalvingDoubling}. */
    public static final String HALVING_DOUBLING = HalvingDoubling.NAME;
    /** {@value Butterfly#NAME}: see {@link Butterfly}. */
    public static final String BUTTERFLY = Butterfly.NAME;
    /** {@value ReduceBroadcast#NAME}: see {@link ReduceBroadcast}. */
    public static final String REDUCE_BROADCAST = ReduceBroadcast.NAME;
    /** {@value TwoLevel#NAME}: see {@link TwoLevel}. */
    public static final String TWO_LEVEL = TwoLevel.NAME;
    /** {@value MultiDimRing#NAME}: see {@link MultiDimRing}. */
    public static final String MULTI_DIM_RING = MultiDimRing.NAME;
    /** {@value BlueConnect#NAME}: see {@link BlueConnect}. */
    public static final String BLUECONNECT = BlueConnect.NAME;
    /** {@value DirectAllReduce#NAME}: see {@link DirectAllReduce}. */
    public static final String DIRECT = DirectAllReduce.NAME;
    /** {@value PairwiseAllToAll#NAME}: see {@link PairwiseAllToAll}. */
    public static final String PAIRWISE = PairwiseAllToAll.NAME;
    /** {@value DisseminationBarrier#NAME}: see {@link DisseminationBarrier}. */
    public static final String DISSEMINATION = DisseminationBarrier.NAME;

    private static final Map<String, Algorithm> REGISTRY = new LinkedHashMap<>();

    static {
        for (Algorithm a : List.of(new Ring(), new HalvingDoubling(), new Butterfly(), new ReduceBroadcast(), new TwoLevel(), new MultiDimRing(),
                new BlueConnect(), new DirectAllReduce(), new PairwiseAllToAll(), new DisseminationBarrier())) {
            REGISTRY.put(a.name(), a);
        }
    }

    private Algorithms() {
    }

    /** Adds (or replaces) an algorithm under its {@link Algorithm#name()}. */
    public static synchronized void register(Algorithm algorithm) {
        if (algorithm.name().equals(AUTO)) {
            throw new IllegalArgumentException("'auto' is reserved for the planner");
        }
        REGISTRY.put(algorithm.name(), algorithm);
    }

    /** The algorithm called {@code name}; the error lists the known names. */
    public static synchronized Algorithm get(String name) {
        Algorithm a = REGISTRY.get(name);
        if (a == null) {
            throw new IllegalArgumentException("unknown algorithm '" + name + "'; known: " + String.join(", ", names()) + ", auto");
        }
        return a;
    }

    /** Every registered name, in registration order. */
    public static synchronized List<String> names() {
        return List.copyOf(REGISTRY.keySet());
    }

    /** The algorithms that can run {@code problem}. */
    public static synchronized List<Algorithm> supporting(Problem problem) {
        List<Algorithm> out = new ArrayList<>();
        for (Algorithm a : REGISTRY.values()) {
            if (a.unsupported(problem) == null) {
                out.add(a);
            }
        }
        return out;
    }

    /** The names of the algorithms that have {@code collective} at all (for some rank count). */
    public static synchronized List<String> namesFor(Collective collective) {
        List<String> out = new ArrayList<>();
        for (Algorithm a : REGISTRY.values()) {
            if (a.unsupported(new Problem(collective, 0, 1, 1, 1, 0, dev.panamax.collectives.Topology.flat(1))) == null) {
                out.add(a.name());
            }
        }
        return out;
    }
}
