package dev.panamax.collectives.plan;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.algorithms.Algorithm;
import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.algorithms.Costs;
import dev.panamax.collectives.algorithms.Prediction;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.memory.DataType;

import java.math.BigDecimal;
import java.math.MathContext;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Chooses the algorithm for {@code -a auto}: every registered algorithm that can run the problem
 * and predicts its time ({@link Algorithm#predict}, plus the compute term of {@link CostModel}) is
 * a candidate, those that follow the topology ({@link Algorithm#followsTopology}) once per
 * factorization of it ({@link #factorizations}), and the fastest predicted one wins. An
 * algorithm registered at run time with {@link Algorithms#register} is weighed like the built-in
 * ones.
 *
 * <p>Deterministic: the same problem gives the same answer on every rank. Times equal to 9
 * significant digits tie, and ties go to the algorithm registered first (the built-in ones are
 * registered simpler, flat ones first), then to the coarsest-last factorization order of
 * {@link #factorizations}.
 */
public final class Planner {
    private Planner() {
    }

    /** The algorithm a call runs and the problem to build its schedule for. */
    public record Selection(Algorithm algorithm, Problem problem) {
        /** The schedule of {@code problem.rank()}. */
        public Schedule build() {
            return algorithm.build(problem);
        }
    }

    /**
     * What runs {@code problem} when {@code algorithm} is selected: that algorithm by name, or for
     * {@link Algorithms#AUTO} the planner's choice with the topology (factorization) it chose.
     * {@code deterministic}: the choice may depend on the call and the rank count only, so auto
     * plans on a flat topology rather than a detected or calibrated one.
     *
     * @throws IllegalArgumentException when the algorithm is unknown or cannot run the problem
     */
    public static Selection select(Problem problem, String algorithm, boolean deterministic) {
        Problem p = problem;
        Algorithm a;
        if (algorithm.equals(Algorithms.AUTO)) {
            Candidate c = choose(deterministic ? p.on(Topology.flat(p.size())) : p);
            a = Algorithms.get(c.algorithm());
            p = p.on(c.topology());
        } else {
            a = Algorithms.get(algorithm);
        }
        String why = a.unsupported(p);
        if (why != null) {
            throw new IllegalArgumentException(p.collective().label() + " with algorithm '" + a.name() + "' on "
                    + p.size()
                    + " ranks: " + why);
        }
        return new Selection(a, p);
    }

    /**
     * The schedule {@code comm} runs for a call with these arguments, under its current algorithm,
     * topology and determinism (what {@code panamax-perf --print-plan} prints). {@code root} is
     * ignored except for broadcast and reduce; the barrier's count and type are ignored.
     */
    public static Schedule scheduleFor(Communicator comm, Collective collective, long count, DataType type, int root) {
        Objects.requireNonNull(collective, "collective");
        Objects.requireNonNull(type, "type");
        boolean rooted = collective == Collective.BROADCAST || collective == Collective.REDUCE;
        if (rooted && (root < 0 || root >= comm.size())) {
            throw new IllegalArgumentException("root " + root + " is not a rank of this communicator (size "
                    + comm.size() + ")");
        }
        boolean barrier = collective == Collective.BARRIER;
        Problem p = new Problem(collective, comm.rank(), comm.size(), barrier ? 0 : count,
                barrier ? 1 : type.byteSize(),
                rooted ? root : 0, comm.topology());
        return select(p, comm.algorithm(collective), comm.deterministic()).build();
    }

    /**
     * The algorithm (and the topology it runs on: for hierarchical algorithms the chosen
     * factorization, with the same ranks in the same places) for {@code problem}. Never an
     * algorithm whose {@code unsupported} is non-null for the returned topology.
     *
     * @throws IllegalArgumentException when no registered algorithm with a cost model can run it
     */
    public static Candidate choose(Problem problem) {
        List<Candidate> c = candidates(problem);
        if (c.isEmpty()) {
            throw new IllegalArgumentException("no algorithm with a cost model can run " + problem.collective().label()
                    + " on "
                    + problem.size() + " ranks");
        }
        return c.get(0);
    }

    /** Every candidate the planner weighed, fastest first (the order {@link #choose} uses). */
    public static List<Candidate> candidates(Problem problem) {
        List<Algorithm> algorithms = Algorithms.all();
        List<Ranked> ranked = new ArrayList<>();
        List<Topology> factorizations = factorizations(problem.topology());
        for (int ai = 0; ai < algorithms.size(); ai++) {
            Algorithm a = algorithms.get(ai);
            List<Topology> tops = a.followsTopology() ? factorizations : List.of(problem.topology());
            for (int fi = 0; fi < tops.size(); fi++) {
                Topology t = tops.get(fi);
                Problem p = t.equals(problem.topology()) ? problem : problem.on(t);
                if (!CostModel.hasModel(a, p)) {
                    continue;
                }
                Prediction pr = CostModel.predict(a, p);
                ranked.add(new Ranked(new Candidate(a.name(), t, pr.seconds(), pr.formula()), quantize(pr.seconds()),
                        ai, fi));
            }
        }
        ranked.sort(Comparator.comparingDouble(Ranked::key).thenComparingInt(Ranked::tie)
                .thenComparingInt(Ranked::factorization));
        List<Candidate> out = new ArrayList<>(ranked.size());
        for (Ranked r : ranked) {
            out.add(r.candidate);
        }
        return out;
    }

    /**
     * A table of the candidates, fastest first: algorithm, factorization (fan-outs innermost
     * first), predicted time and formula; the first row is the choice. For
     * {@code panamax-perf --explain}.
     */
    public static String explain(Problem problem) {
        List<Candidate> c = candidates(problem);
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "%s of %d x %d B on %d ranks, topology %s%n", problem.collective().label(),
                problem.count(),
                problem.elementBytes(), problem.size(), problem.topology()));
        int wa = "algorithm".length();
        int wf = "factorization".length();
        for (Candidate x : c) {
            wa = Math.max(wa, x.algorithm().length());
            wf = Math.max(wf, Costs.fanouts(x.topology()).length());
        }
        String row = "%-2s%-" + wa + "s  %-" + wf + "s  %12s  %s%n";
        b.append(String.format(Locale.ROOT, row, "", "algorithm", "factorization", "predicted", "formula"));
        for (int i = 0; i < c.size(); i++) {
            Candidate x = c.get(i);
            b.append(String.format(Locale.ROOT, row, i == 0 ? "*" : "", x.algorithm(), Costs.fanouts(x.topology()),
                    Costs.secs(x.predictedSeconds()), x.formula()));
        }
        if (c.isEmpty()) {
            b.append("(no algorithm with a cost model can run this)\n");
        }
        return b.toString();
    }

    /**
     * The topology as given, then every coarser one obtained by merging runs of adjacent levels
     * (merged fan-out: the product; bandwidth: the minimum; latency: the maximum), each keeping
     * the placement; 2^(levels-1) in all, the given one first and the single merged level last.
     * Merging keeps every rank's box position, since position = sum c_i * (p_0 ... p_{i-1}) is
     * unchanged when two adjacent coordinates fuse into c_i + p_i * c_{i+1}.
     */
    public static List<Topology> factorizations(Topology t) {
        int k = t.levels();
        int[] placement = new int[t.size()];
        for (int pos = 0; pos < placement.length; pos++) {
            placement[pos] = t.rankAt(pos);
        }
        List<Topology> out = new ArrayList<>();
        out.add(t);
        // bit i of cuts set: levels i and i+1 stay separate
        for (int cuts = (1 << (k - 1)) - 2; cuts >= 0; cuts--) {
            List<Topology.Level> levels = new ArrayList<>();
            int fanout = 1;
            double bw = Double.POSITIVE_INFINITY;
            double lat = 0;
            for (int i = 0; i < k; i++) {
                Topology.Level l = t.level(i);
                fanout *= l.fanout();
                bw = Math.min(bw, l.bytesPerSecond());
                lat = Math.max(lat, l.latencySeconds());
                if (i == k - 1 || (cuts & (1 << i)) != 0) {
                    levels.add(new Topology.Level(fanout, bw, lat));
                    fanout = 1;
                    bw = Double.POSITIVE_INFINITY;
                    lat = 0;
                }
            }
            out.add(new Topology(levels, placement));
        }
        return out;
    }

    /** Round to 9 significant digits, so that formulas equal up to rounding tie. */
    private static double quantize(double s) {
        if (s == 0 || !Double.isFinite(s)) {
            return s;
        }
        return new BigDecimal(s).round(new MathContext(9)).doubleValue();
    }

    private record Ranked(Candidate candidate, double key, int tie, int factorization) {
    }
}
