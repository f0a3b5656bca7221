package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.Topology;

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
        // Registration order is the planner's preference among equal predictions: the simpler,
        // flat algorithms first.
        for (Algorithm a : List.of(new Ring(), new HalvingDoubling(), new Butterfly(), new DirectAllReduce(),
                new BlueConnect(),
                new MultiDimRing(), new TwoLevel(), new ReduceBroadcast(), new PairwiseAllToAll(),
                        new DisseminationBarrier())) {
            REGISTRY.put(a.name(), a);
        }
    }

    private Algorithms() {
    }

    /**
     * Adds an algorithm under its {@link Algorithm#name()}, after those registered before it, or
     * replaces the one of that name in its place. From then on it can be selected by name and, when
     * it predicts its time ({@link Algorithm#predict}), it is a candidate for {@code auto}.
     */
    public static synchronized void register(Algorithm algorithm) {
        if (algorithm.name().equals(AUTO)) {
            throw new IllegalArgumentException("'auto' is reserved for the planner");
        }
        REGISTRY.put(algorithm.name(), algorithm);
    }

    /** Removes the algorithm called {@code name} (built-in or registered); false when there was none. */
    public static synchronized boolean unregister(String name) {
        return REGISTRY.remove(name) != null;
    }

    /** The algorithm called {@code name}; the error lists the known names. */
    public static synchronized Algorithm get(String name) {
        Algorithm a = REGISTRY.get(name);
        if (a == null) {
            throw new IllegalArgumentException("unknown algorithm '" + name + "'; known: " + String.join(", ", names())
                    + ", auto");
        }
        return a;
    }

    /** Every registered algorithm, in registration order (the planner's order of preference). */
    public static synchronized List<Algorithm> all() {
        return List.copyOf(REGISTRY.values());
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
            if (a.unsupported(new Problem(collective, 0, 1, 1, 1, 0, Topology.flat(1))) == null) {
                out.add(a.name());
            }
        }
        return out;
    }
}
