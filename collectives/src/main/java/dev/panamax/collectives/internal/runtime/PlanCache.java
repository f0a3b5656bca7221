package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.algorithms.Algorithm;
import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.plan.Planner;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.Simulator;
import dev.panamax.memory.DataType;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A communicator's choice of algorithms and its schedules: the algorithm selected per collective
 * (auto by default), the topology and the determinism flag the planner sees, and the schedules
 * built from them, kept (least recently used first out) so that a repeated call allocates
 * nothing. Any change of choice empties the cache. Thread-safe.
 */
final class PlanCache {
    private static final int ENTRIES = 256;

    private record Key(Collective collective, long count, int elementBytes, int root) {
    }

    private final int rank;
    private final int size;
    private final Map<Collective, String> algorithms = new EnumMap<>(Collective.class);
    private final Map<Key, Schedule> plans = lru();
    /** Schedules for all-reduces run concurrently, which must be stage-aligned. */
    private final Map<Key, PreMulPlan> concurrentPlans = lru();
    private final Map<Key, PreMulPlan> preMulPlans = lru();
    /** The last pre-multiplied plan returned: a loop of the same call finds it without a key or a map lookup. */
    private PreMulPlan lastPreMulPlan;
    private volatile Topology topology;
    private boolean deterministic;
    /** The last call's key and schedule: a loop of the same call finds it without a key or a map lookup. */
    private Key lastKey;
    private Schedule lastPlan;
    /** The all-gather of one float64 per rank that every pre-multiplied sum runs first: kept apart from {@link
     * #lastPlan}, which the sum's own schedule holds in a loop of such calls. */
    private Schedule scalarGather;

    PlanCache(int rank, int size, Topology topology) {
        this.rank = rank;
        this.size = size;
        this.topology = checked(topology);
        for (Collective c : Collective.values()) {
            algorithms.put(c, Algorithms.AUTO);
        }
    }

    private static <V> Map<Key, V> lru() {
        return new LinkedHashMap<>(64, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Key, V> eldest) {
                return size() > ENTRIES;
            }
        };
    }

    Topology topology() {
        return topology;
    }

    synchronized void setTopology(Topology t) {
        this.topology = checked(Objects.requireNonNull(t, "topology"));
        clear();
    }

    private Topology checked(Topology t) {
        if (t.size() != size) {
            throw new IllegalArgumentException("topology " + t + " has " + t.size() + " ranks, this communicator "
                    + size);
        }
        return t;
    }

    synchronized boolean deterministic() {
        return deterministic;
    }

    synchronized void setDeterministic(boolean on) {
        deterministic = on;
        clear();
    }

    synchronized String algorithm(Collective collective) {
        return algorithms.get(collective);
    }

    /** Selects {@code algorithm} (a registered name, or auto) for {@code collective}; refuses one that has no such
     * collective. */
    void setAlgorithm(Collective collective, String algorithm) {
        Objects.requireNonNull(collective, "collective");
        Objects.requireNonNull(algorithm, "algorithm");
        if (!algorithm.equals(Algorithms.AUTO)) {
            Algorithm a = Algorithms.get(algorithm);
            if (!Algorithms.namesFor(collective).contains(a.name())) {
                throw new IllegalArgumentException("algorithm '" + algorithm + "' has no " + collective.label()
                        + "; for "
                        + collective.label() + ": " + String.join(", ", Algorithms.namesFor(collective)) + ", auto");
            }
        }
        synchronized (this) {
            algorithms.put(collective, algorithm);
            clear();
        }
    }

    /** The schedule for a call, from the cache or built now (before any message moves, so a bad choice fails cleanly).
     * */
    synchronized Schedule plan(Collective collective, long count, DataType type, int root) {
        Key last = lastKey;
        if (last != null && last.collective == collective && last.count == count
                && last.elementBytes == type.byteSize() && last.root == root) {
            return lastPlan;
        }
        Key key = new Key(collective, count, type.byteSize(), root);
        Schedule s = plans.get(key);
        if (s == null) {
            s = select(collective, count, type, root).build();
            plans.put(key, s);
        }
        lastKey = key;
        lastPlan = s;
        return s;
    }

    /**
     * The algorithm of the schedule {@link #plan} gives for a call, from the cache or built now, without making it
     * the last call's (a query between the calls of a loop leaves the loop's shortcut in place).
     */
    synchronized String algorithmFor(Collective collective, long count, DataType type, int root) {
        Schedule s = plans.get(new Key(collective, count, type.byteSize(), root));
        return (s != null ? s : select(collective, count, type, root).build()).algorithm();
    }

    /**
     * The schedule of one all-reduce run concurrently with others: the one a plain call would run
     * when that algorithm's schedules are stage-aligned (checked once per size on every rank's
     * schedule, so every rank decides alike), else the ring's, which always are.
     */
    synchronized PreMulPlan concurrentPlan(long count, DataType type) {
        Key key = new Key(Collective.ALL_REDUCE, count, type.byteSize(), 0);
        PreMulPlan p = concurrentPlans.get(key);
        if (p == null) {
            List<Schedule> all = everyRank(select(Collective.ALL_REDUCE, count, type, 0));
            if (!Simulator.stageAligned(all)) {
                all.clear();
                for (int r = 0; r < size; r++) {
                    all.add(Algorithms.get(Algorithms.RING)
                            .build(new Problem(Collective.ALL_REDUCE, r, size, count, type.byteSize(), 0, topology)));
                }
            }
            p = PreMulPlan.of(all, rank);
            concurrentPlans.put(key, p);
        }
        return p;
    }

    /**
     * The schedule of a pre-multiplied sum: the plain call's, with which receives carry a peer's raw input (found
     * from every rank's schedule, once per call shape).
     */
    synchronized PreMulPlan preMulPlan(Collective collective, long count, DataType type, int root) {
        Schedule mine = plan(collective, count, type, root);
        PreMulPlan last = lastPreMulPlan;
        if (last != null && last.schedule() == mine) {
            return last;
        }
        Key key = new Key(collective, count, type.byteSize(), root);
        PreMulPlan p = preMulPlans.get(key);
        if (p == null || p.schedule() != mine) {
            List<Schedule> all = everyRank(select(collective, count, type, root));
            all.set(rank, mine); // the plan keeps the very schedule the plain call runs
            p = PreMulPlan.of(all, rank);
            preMulPlans.put(key, p);
        }
        lastPreMulPlan = p;
        return p;
    }

    /** The schedule of the all-gather of every rank's scalar (one float64 each) that starts a pre-multiplied sum. */
    synchronized Schedule scalarGather() {
        Schedule s = scalarGather;
        if (s == null) {
            s = select(Collective.ALL_GATHER, 1, DataType.FLOAT64, 0).build();
            scalarGather = s;
        }
        return s;
    }

    /** The schedules of every rank for selection {@code c}, by rank. */
    private List<Schedule> everyRank(Planner.Selection c) {
        List<Schedule> all = new ArrayList<>(size);
        for (int r = 0; r < size; r++) {
            all.add(c.algorithm().build(c.problem().atRank(r)));
        }
        return all;
    }

    private Planner.Selection select(Collective collective, long count, DataType type, int root) {
        Problem p = new Problem(collective, rank, size, count, type.byteSize(), root, topology);
        return Planner.select(p, algorithms.get(collective), deterministic);
    }

    private void clear() {
        plans.clear();
        concurrentPlans.clear();
        preMulPlans.clear();
        lastPreMulPlan = null;
        scalarGather = null;
        lastKey = null;
        lastPlan = null;
    }
}
