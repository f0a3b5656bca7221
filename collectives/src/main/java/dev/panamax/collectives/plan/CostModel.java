package dev.panamax.collectives.plan;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.algorithms.Algorithm;
import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.schedule.Problem;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * The alpha-beta cost models of the collectives: the formulas of paper 000 (BlueConnect, eq. 1-10)
 * and paper 004 (ASC-WFBP, eq. 3 and 7-11) as plain functions, and {@link #predict} which applies
 * them to what each registered algorithm's schedule really does on a {@link Topology}.
 *
 * <p>Units: sizes in bytes, times in seconds, bandwidths in bytes per second. Arithmetic
 * (reductions, copies) is not counted, as in paper 000, section 2.2.
 *
 * <h2>What a level's bandwidth means</h2>
 *
 * {@link Topology.Level#bytesPerSecond()} b_i is the bandwidth ONE rank's stream gets at level i
 * while all the ranks under that level communicate at the same time (per-rank NIC or multi-rail
 * semantics; the emulation gives every rank its own rate-limited link). A message between two ranks
 * whose coordinates differ at level i and none above "crosses" level i and is taken to traverse
 * levels 0..i, so it moves at {@code w(i) = min_{j <= i} b_j} after a latency
 * {@code alpha(i) = max_{j <= i} alpha_j}. A flat topology (one level) gives the same alpha and w
 * to everything.
 *
 * <p>Mapping onto paper 000: the paper's w_j is the aggregate uplink bandwidth of a level-j switch
 * port of a fat tree, shared by the {@code p_0 * ... * p_{j-1}} ranks below it, so its
 * {@code w_j / prod_{k<j} p_k} is exactly our b_j (the division is already folded in): eq. 9's
 * stage-i bandwidth {@code min_{j<=i} w_j / prod_{k<j} p_k} becomes {@code min_{j<=i} b_j = w(i)}.
 * Eq. 6's {@code min W} becomes w(L) for the outermost level L the ring crosses, and eq. 7's leader
 * streams cross the outermost level too. On a torus (eq. 10) the p_0 ranks of a node share
 * dedicated links, so b_j = w_j / p_0 for j >= 1 and b_0 = w_0, giving the same per-rank rule.
 * Paper 000 has one alpha; here each stage uses the alpha of the level it crosses.
 *
 * <h2>Several messages in one stage</h2>
 *
 * A rank that sends (or receives) several messages in one stage (direct's exchange, the gather
 * at a node leader, a tree root) pushes them through its own link one after the other: the stage
 * costs the largest latency plus the sum of size / w over the messages.
 */
public final class CostModel {
    private CostModel() {
    }

    /**
     * A predicted time, the formula that gave it (with the paper's equation numbers), and the bytes
     * the busiest rank sends.
     */
    public record Prediction(double seconds, String formula, double bytesPerRank) {
    }

    // ---- paper 000: basic models ------------------------------------------------------------

    /** Eq. 1: ring reduce-scatter or all-gather of n bytes over p ranks: {@code (p-1) alpha + (p-1)/p * n/w}. */
    public static double tr(int p, double n, double alpha, double w) {
        checkP(p);
        return (p - 1) * alpha + (double) (p - 1) / p * n / w;
    }

    /** Eq. 2: recursive halving/doubling: {@code lg(p) alpha + (p-1)/p * n/w} (exact lg for powers of two). */
    public static double tc(int p, double n, double alpha, double w) {
        checkP(p);
        return lg(p) * alpha + (double) (p - 1) / p * n / w;
    }

    /** Eq. 3: {@link #tc} when p is a power of two, else {@link #tr}. */
    public static double trc(int p, double n, double alpha, double w) {
        return isPowerOfTwo(p) ? tc(p, n, alpha, w) : tr(p, n, alpha, w);
    }

    /** Eq. 4: broadcast as scatter + all-gather: {@code T_c + T_r}. */
    public static double broadcast(int p, double n, double alpha, double w) {
        return tc(p, n, alpha, w) + tr(p, n, alpha, w);
    }

    /** Eq. 4: reduce as reduce-scatter + gather, the same cost as {@link #broadcast}. */
    public static double reduce(int p, double n, double alpha, double w) {
        return broadcast(p, n, alpha, w);
    }

    /** Eq. 5: one-level ring all-reduce, {@code 2(|P|-1) (alpha + (N/|P|) / min W)}. */
    public static double oneLevel(int size, double n, double alpha, double[] w) {
        checkP(size);
        return 2.0 * (size - 1) * (alpha + n / size / min(w));
    }

    /** Eq. 6: the same as eq. 5 written {@code 2 T_r(|P|, N, alpha, min W)}. */
    public static double oneLevel(int size, double n, double alpha, double minW) {
        return 2 * tr(size, n, alpha, minW);
    }

    /**
     * Eq. 7: the two-level all-reduce of paper 000, {@code T_reduce(p0, N, alpha, w0) +
     * T_broadcast(p0, N, alpha, w0) + 2 T_r/c(|P|/p0, N, alpha, min W)}; with the paper's single
     * alpha, pass the same value for both latencies.
     */
    public static double twoLevel(int p0, int size, double n, double alphaNode, double w0, double alphaOuter, double minW) {
        checkP(p0);
        if (size % p0 != 0) {
            throw new IllegalArgumentException(size + " ranks do not fill nodes of " + p0);
        }
        return reduce(p0, n, alphaNode, w0) + broadcast(p0, n, alphaNode, w0) + 2 * trc(size / p0, n, alphaOuter, minW);
    }

    /**
     * Eq. 9: BlueConnect on a fat tree, {@code 2 sum_i T_r/c(p_i, N / prod_{j<i} p_j, alpha,
     * min_{0<=j<=i} w_j / prod_{k<j} p_k)}, where {@code w} are the paper's per-level switch
     * bandwidths (aggregate over the ranks below, see the class comment).
     */
    public static double blueConnect(int[] p, double n, double alpha, double[] w) {
        double[] a = new double[p.length];
        java.util.Arrays.fill(a, alpha);
        return blueConnect(p, n, a, w);
    }

    /** Eq. 9 with a latency per level ({@code alpha[i]} for stage i). */
    public static double blueConnect(int[] p, double n, double[] alpha, double[] w) {
        checkLevels(p, alpha, w);
        double[] stage = new double[p.length];
        double prod = 1;
        double m = Double.POSITIVE_INFINITY;
        for (int i = 0; i < p.length; i++) {
            m = Math.min(m, w[i] / prod);
            stage[i] = m;
            prod *= p[i];
        }
        return decomposed(p, n, alpha, stage);
    }

    /**
     * Eq. 10: BlueConnect on a torus, {@code 2 sum_i T_r/c(p_i, N / prod_{j<i} p_j, alpha,
     * min{w_0, w_j / p_0 : 1 <= j <= i})}: the p_0 ranks of a node share its dedicated links.
     */
    public static double blueConnectTorus(int[] p, double n, double alpha, double[] w) {
        double[] a = new double[p.length];
        java.util.Arrays.fill(a, alpha);
        checkLevels(p, a, w);
        double[] stage = new double[p.length];
        double m = w[0];
        for (int i = 0; i < p.length; i++) {
            if (i >= 1) {
                m = Math.min(m, w[i] / p[0]);
            }
            stage[i] = m;
        }
        return decomposed(p, n, a, stage);
    }

    /** {@code 2 sum_i T_r/c(p_i, N / prod_{j<i} p_j, alpha_i, stageW_i)}: the sum shared by eq. 9 and 10. */
    private static double decomposed(int[] p, double n, double[] alpha, double[] stageW) {
        double t = 0;
        double part = n;
        for (int i = 0; i < p.length; i++) {
            t += 2 * trc(p[i], part, alpha[i], stageW[i]);
            part /= p[i];
        }
        return t;
    }

    // ---- paper 004: a + b m and contention ----------------------------------------------------

    /** Paper 004, eq. 3: one all-reduce of m bytes, {@code a + b m}. */
    public static double allReduce(double a, double b, double m) {
        return a + b * m;
    }

    /** Paper 004, eq. 8 (for k = 2): k all-reduces of m bytes one after the other, {@code k (a + b m)}. */
    public static double sequentialAllReduces(int k, double a, double b, double m) {
        return k * allReduce(a, b, m);
    }

    /**
     * Paper 004, section III (the denominator of eq. 9): k all-reduces of m bytes started together
     * all finish after {@code a + gamma b m}, gamma (1 <= gamma <= k, measured for that k) modelling
     * their contention for the links. The startup a is paid once.
     */
    public static double simultaneousAllReduces(double a, double b, double gamma, double m) {
        return a + gamma * b * m;
    }

    /** Paper 004, eq. 7 (k = 1, gamma = 1) and eq. 9 (k = 2): overall throughput {@code k m / (a + gamma b m)}. */
    public static double throughput(int k, double a, double b, double gamma, double m) {
        return k * m / simultaneousAllReduces(a, b, gamma, m);
    }

    /** Paper 004, eq. 11: the extra time of each of the simultaneous all-reduces, {@code (gamma - 1) b m}. */
    public static double contentionPenalty(double b, double gamma, double m) {
        return (gamma - 1) * b * m;
    }

    // ---- the paper's formulas on a topology -------------------------------------------------

    /** Eq. 6 on {@code p}'s topology: the one-level ring with the latency and bandwidth of the outermost level. */
    public static Prediction paperOneLevel(Problem p) {
        Net net = new Net(p.topology());
        double n = p.byteSize();
        if (p.size() == 1) {
            return zero("nothing to do on one rank");
        }
        int g = net.outer;
        return new Prediction(oneLevel(p.size(), n, net.alpha(g), net.w(g)),
                "2*T_r(" + p.size() + ", " + bytes(n) + ", " + secs(net.alpha(g)) + ", " + bw(net.w(g)) + ") (eq. 6)",
                2.0 * (p.size() - 1) / p.size() * n);
    }

    /**
     * Eq. 7 on {@code p}'s topology: p0 = level 0's fan-out on level 0's link, |P|/p0 leaders
     * crossing the outermost level (min W in per-rank terms).
     */
    public static Prediction paperTwoLevel(Problem p) {
        Net net = new Net(p.topology());
        double n = p.byteSize();
        int p0 = p.topology().fanout(0);
        int leaders = p.size() / p0;
        if (p.size() == 1) {
            return zero("nothing to do on one rank");
        }
        int g = net.outer;
        double t = twoLevel(p0, p.size(), n, net.alpha(0), net.w(0), net.alpha(g), net.w(g));
        return new Prediction(t, "T_reduce(" + p0 + ", N, " + secs(net.alpha(0)) + ", " + bw(net.w(0)) + ") + T_broadcast(same) + 2*T_r/c("
                + leaders + ", " + bytes(n) + ", " + secs(net.alpha(g)) + ", " + bw(net.w(g)) + ") (eq. 7)",
                2.0 * (p0 - 1) / p0 * n + 2.0 * (leaders - 1) / leaders * n);
    }

    /** Eq. 9 on {@code p}'s topology, the paper's w_j taken as b_j * prod_{k<j} p_k (see the class comment). */
    public static Prediction paperBlueConnect(Problem p) {
        Topology t = p.topology();
        int k = t.levels();
        int[] f = t.fanouts();
        double[] a = new double[k];
        double[] w = new double[k];
        double prod = 1;
        Net net = new Net(t);
        for (int i = 0; i < k; i++) {
            a[i] = net.alpha(i);
            w[i] = t.level(i).bytesPerSecond() * prod;
            prod *= f[i];
        }
        double n = p.byteSize();
        double bytes = 0;
        double part = n;
        for (int pi : f) {
            bytes += 2.0 * (pi - 1) / pi * part;
            part /= pi;
        }
        return new Prediction(blueConnect(f, n, a, w), "2*sum_i T_r/c(p_i, N/prod p_j, alpha_i, min_j<=i w_j/prod_k<j p_k) over "
                + fanouts(t) + " (eq. 9)", bytes);
    }

    // ---- predictions for the registered algorithms ------------------------------------------

    /** True when {@link #predict} has a model for {@code algorithm} running {@code collective}. */
    public static boolean models(String algorithm, Collective collective) {
        return switch (algorithm) {
            case "ring" -> switch (collective) {
                case ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, BROADCAST, REDUCE -> true;
                default -> false;
            };
            case "rhd" -> collective == Collective.ALL_REDUCE || collective == Collective.REDUCE_SCATTER || collective == Collective.ALL_GATHER;
            case "reduce-bcast" -> collective == Collective.ALL_REDUCE || collective == Collective.REDUCE || collective == Collective.BROADCAST;
            case "butterfly", "two-level", "mdring", "blueconnect", "direct" -> collective == Collective.ALL_REDUCE;
            case "pairwise" -> collective == Collective.ALL_TO_ALL;
            case "dissemination" -> collective == Collective.BARRIER;
            default -> false;
        };
    }

    /**
     * The predicted time of the registered algorithm {@code algorithm} on {@code p} (all ranks; the
     * rank field is ignored), following the stages its schedule really runs; see the class comment
     * for the bandwidth semantics and docs/algorithms.md for the formulas.
     *
     * @throws IllegalArgumentException when there is no model for the algorithm and collective, or
     *     the registered algorithm cannot run {@code p}
     */
    public static Prediction predict(String algorithm, Problem p) {
        Objects.requireNonNull(algorithm, "algorithm");
        Objects.requireNonNull(p, "problem");
        if (!models(algorithm, p.collective())) {
            throw new IllegalArgumentException("no cost model for " + algorithm + " " + p.collective().label());
        }
        if (Algorithms.names().contains(algorithm)) {
            Algorithm a = Algorithms.get(algorithm);
            String why = a.unsupported(p);
            if (why != null) {
                throw new IllegalArgumentException(why);
            }
        }
        if (p.size() == 1 || (p.count() == 0 && p.collective() != Collective.BARRIER)) {
            return zero(p.size() == 1 ? "one rank: local copy" : "empty vector");
        }
        Net net = new Net(p.topology());
        Prediction wire = network(algorithm, p, net);
        double reduced = reducedBytes(algorithm, p);
        if (reduced == 0) {
            return wire;
        }
        double compute = reduced / reduceBytesPerSecond();
        return new Prediction(wire.seconds() + compute, wire.formula() + " + R " + bytes(reduced) + "/" + bw(reduceBytesPerSecond()),
                wire.bytesPerRank());
    }

    /**
     * Bytes the reduction kernels produce, per second, on one core: the compute term {@code R} of
     * the predictions (the papers' models leave arithmetic out; on shared memory it is of the same
     * order as the transfers and decides, for instance, between a butterfly that folds the whole
     * vector at every rank and a ring that folds 1/n of it). 10 GB/s unless the system property
     * {@code panamax.model.reduceBytesPerSecond} says otherwise.
     */
    public static double reduceBytesPerSecond() {
        String v = System.getProperty("panamax.model.reduceBytesPerSecond");
        if (v != null) {
            try {
                double d = Double.parseDouble(v.trim());
                if (d > 0) {
                    return d;
                }
            } catch (NumberFormatException ignored) {
                // fall through to the default
            }
        }
        return DEFAULT_REDUCE_BYTES_PER_SECOND;
    }

    /** The default of {@link #reduceBytesPerSecond()}. */
    public static final double DEFAULT_REDUCE_BYTES_PER_SECOND = 10e9;

    /**
     * The bytes that the busiest of ranks 0 and n-1 folds (recv-reduce and local reduce steps of
     * their schedules): the compute part of the critical path.
     */
    static double reducedBytes(String algorithm, Problem p) {
        Collective c = p.collective();
        if (c != Collective.ALL_REDUCE && c != Collective.REDUCE_SCATTER && c != Collective.REDUCE) {
            return 0;
        }
        if (!Algorithms.names().contains(algorithm)) {
            return 0;
        }
        Algorithm a = Algorithms.get(algorithm);
        long most = 0;
        for (int r : java.util.stream.IntStream.of(0, p.size() - 1, p.root()).distinct().toArray()) {
            long e = 0;
            for (dev.panamax.collectives.schedule.Stage st : a.build(p.atRank(r)).stages()) {
                for (dev.panamax.collectives.schedule.Step s : st.steps()) {
                    if (s instanceof dev.panamax.collectives.schedule.Step.Recv rv && rv.with() != null) {
                        e += rv.dst().count();
                    } else if (s instanceof dev.panamax.collectives.schedule.Step.Reduce rd) {
                        e += rd.dst().count();
                    }
                }
            }
            most = Math.max(most, e);
        }
        return (double) most * p.elementBytes();
    }

    private static Prediction network(String algorithm, Problem p, Net net) {
        return switch (algorithm) {
            case "ring" -> ring(p, net);
            case "rhd" -> rhd(p, net);
            case "butterfly" -> butterfly(p, net);
            case "reduce-bcast" -> tree(p, net);
            case "two-level" -> twoLevelImpl(p, net);
            case "mdring" -> hierarchical(p, net, false);
            case "blueconnect" -> hierarchical(p, net, true);
            case "direct" -> direct(p, net);
            case "pairwise" -> {
                int g = net.outer;
                double c = p.byteSize();
                yield new Prediction((p.size() - 1) * (net.alpha(g) + c / net.w(g)),
                        "(n-1)*(alpha + C/w) = " + (p.size() - 1) + "*(" + secs(net.alpha(g)) + " + " + bytes(c) + "/" + bw(net.w(g)) + ")",
                        (p.size() - 1) * c);
            }
            case "dissemination" -> {
                int g = net.outer;
                int rounds = ceilLg(p.size());
                yield new Prediction(rounds * net.alpha(g), "ceil(lg n)*alpha = " + rounds + "*" + secs(net.alpha(g)), 0);
            }
            default -> throw new IllegalArgumentException("no cost model for " + algorithm);
        };
    }

    private static Prediction ring(Problem p, Net net) {
        int n = p.size();
        int g = net.outer;
        double a = net.alpha(g);
        double w = net.w(g);
        double m = p.byteSize();
        String aw = secs(a) + ", " + bw(w);
        return switch (p.collective()) {
            case ALL_REDUCE -> new Prediction(2 * tr(n, m, a, w), "2*T_r(" + n + ", " + bytes(m) + ", " + aw + ") (eq. 6)", 2.0 * (n - 1) / n * m);
            case REDUCE_SCATTER, ALL_GATHER -> new Prediction(tr(n, n * m, a, w), "T_r(" + n + ", " + n + "*" + bytes(m) + ", " + aw + ") (eq. 1)",
                    (n - 1) * m);
            case REDUCE -> new Prediction(tr(n, m, a, w) + a + (double) (n - 1) / n * m / w,
                    "T_r(" + n + ", " + bytes(m) + ", " + aw + ") (eq. 1) + gather at root: alpha + (n-1)/n*N/w", m);
            case BROADCAST -> {
                long piece = Math.max(1, (512L * 1024) / p.elementBytes());
                long pieces = (p.count() + piece - 1) / piece;
                double hops = pieces + n - 2;
                double s = m / pieces;
                yield new Prediction(hops * (a + s / w), "chain of " + pieces + " piece(s): (pieces+n-2)*(alpha + N/pieces/w) = " + (long) hops
                        + "*(" + secs(a) + " + " + bytes(s) + "/" + bw(w) + ")", m);
            }
            default -> throw new IllegalArgumentException("ring has no " + p.collective().label());
        };
    }

    /** Rounds of recursive halving (or doubling) over {@code group}: sum_k alpha_k + blocks_k * unit / w_k. */
    private static double rounds(Net net, int[] group, double unit, boolean halvingOrder, StringBuilder f) {
        int pp = group.length;
        double t = 0;
        for (int mask = halvingOrder ? pp >> 1 : 1; halvingOrder ? mask > 0 : mask < pp; mask = halvingOrder ? mask >> 1 : mask << 1) {
            int l = net.maskLevel(group, mask);
            t += net.alpha(l) + mask * unit / net.w(l);
            f.append(f.isEmpty() ? "" : " + ").append("(").append(secs(net.alpha(l))).append(" + ").append(bytes(mask * unit)).append("/")
                    .append(bw(net.w(l))).append(")");
        }
        return t;
    }

    private static Prediction rhd(Problem p, Net net) {
        int n = p.size();
        double m = p.byteSize();
        switch (p.collective()) {
            case REDUCE_SCATTER, ALL_GATHER -> {
                StringBuilder f = new StringBuilder();
                double t = rounds(net, identity(n), m, p.collective() == Collective.REDUCE_SCATTER, f);
                return new Prediction(t, "T_c(" + n + ", " + n + "*" + bytes(m) + ") per round (eq. 2): " + f, (n - 1) * m);
            }
            case ALL_REDUCE -> {
                int pp = Integer.highestOneBit(n);
                int[] g = foldedGroup(n);
                StringBuilder f = new StringBuilder();
                double half = rounds(net, g, m / pp, true, f);
                double t = 2 * half;
                String formula = "2*T_c(" + pp + ", " + bytes(m) + ") per round (eq. 2): 2*[" + f + "]";
                double sent = 2.0 * (pp - 1) / pp * m;
                if (pp != n) {
                    double fold = fold(net, n, m);
                    t += 2 * fold;
                    formula += " + fold/unfold 2*(alpha + N/w)";
                    sent += m;
                }
                return new Prediction(t, formula, sent);
            }
            default -> throw new IllegalArgumentException("rhd has no " + p.collective().label());
        }
    }

    /** One fold (or unfold) stage: the whole vector between the paired ranks below 2(n - p'). */
    private static double fold(Net net, int n, double m) {
        int extra = n - Integer.highestOneBit(n);
        int l = -1;
        for (int i = 0; i < extra; i++) {
            l = Math.max(l, net.cross(2 * i, 2 * i + 1));
        }
        return net.alpha(l) + m / net.w(l);
    }

    private static Prediction butterfly(Problem p, Net net) {
        int n = p.size();
        double m = p.byteSize();
        int pp = Integer.highestOneBit(n);
        int[] g = foldedGroup(n);
        double t = 0;
        int rounds = 0;
        for (int mask = 1; mask < pp; mask <<= 1, rounds++) {
            int l = net.maskLevel(g, mask);
            t += net.alpha(l) + m / net.w(l);
        }
        String formula = "lg(p')*(alpha + N/w), p'=" + pp + ": " + rounds + " whole-vector swaps of " + bytes(m);
        double sent = rounds * m;
        if (pp != n) {
            t += 2 * fold(net, n, m);
            formula += " + fold/unfold 2*(alpha + N/w)";
            sent += m;
        }
        return new Prediction(t, formula, sent);
    }

    private static Prediction tree(Problem p, Net net) {
        int n = p.size();
        int g = net.outer;
        double m = p.byteSize();
        int d = ceilLg(n);
        double one = d * (net.alpha(g) + m / net.w(g));
        String step = d + "*(" + secs(net.alpha(g)) + " + " + bytes(m) + "/" + bw(net.w(g)) + ")";
        return switch (p.collective()) {
            case ALL_REDUCE -> new Prediction(2 * one, "binomial reduce + broadcast: 2*ceil(lg n)*(alpha + N/w) = 2*" + step, d * m);
            case REDUCE -> new Prediction(one, "binomial reduce: ceil(lg n)*(alpha + N/w) = " + step, m);
            case BROADCAST -> new Prediction(one, "binomial broadcast: ceil(lg n)*(alpha + N/w) = " + step, d * m);
            default -> throw new IllegalArgumentException("reduce-bcast has no " + p.collective().label());
        };
    }

    private static Prediction direct(Problem p, Net net) {
        int n = p.size();
        double m = p.byteSize();
        Topology t = p.topology();
        double sum = 0;
        long inner = 1;
        int g = net.outer;
        StringBuilder f = new StringBuilder();
        for (int i = 0; i < t.levels(); i++) {
            long upTo = inner * t.fanout(i);
            long peers = upTo - inner;
            if (peers > 0) {
                sum += peers * m / net.w(i);
                f.append(" + ").append(peers).append("*").append(bytes(m)).append("/").append(bw(net.w(i)));
            }
            inner = upTo;
        }
        // One stage, but n-1 messages each way: the per-message overhead (posting, polling, the
        // peer being scheduled) is paid n-1 times, which is what makes recursive doubling better
        // than the direct exchange on busy CPUs from 4 ranks on.
        return new Prediction((n - 1) * net.alpha(g) + sum, "(n-1)*alpha + (n-1)*N/w: " + (n - 1) + "*" + secs(net.alpha(g)) + f,
                (n - 1) * m);
    }

    /**
     * TwoLevel.java: ring reduce-scatter in the node (level 0), gather of the parts at the leader,
     * the leaders' rhd (power-of-two count) or ring all-reduce, pipelined chain broadcast in the node.
     */
    private static Prediction twoLevelImpl(Problem p, Net net) {
        Topology t = p.topology();
        int n = p.size();
        int p0 = t.fanout(0);
        int leaders = n / p0;
        double m = p.byteSize();
        double a0 = net.alpha(0);
        double w0 = net.w(0);
        double time = 0;
        StringBuilder f = new StringBuilder();
        if (p0 > 1) {
            double rs = tr(p0, m, a0, w0);
            double gather = a0 + (double) (p0 - 1) / p0 * m / w0;
            long piece = Math.max(1, (512L * 1024) / p.elementBytes());
            long pieces = (p.count() + piece - 1) / piece;
            double chain = (pieces + p0 - 2) * (a0 + m / pieces / w0);
            time += rs + gather + chain;
            f.append("node: T_r(").append(p0).append(", ").append(bytes(m)).append(", ").append(secs(a0)).append(", ").append(bw(w0))
                    .append(") (eq. 1) + gather alpha + (p0-1)/p0*N/w + chain (pieces+p0-2)*(alpha + N/pieces/w)");
        }
        if (leaders > 1) {
            int[] lead = new int[leaders];
            for (int i = 0, k = 0; i < n; i++) {
                int q = t.rankAt(i);
                if (t.coordinate(q, 0) == 0) {
                    lead[k++] = q;
                }
            }
            double lt;
            String lf;
            if (isPowerOfTwo(leaders)) {
                StringBuilder r = new StringBuilder();
                lt = 2 * rounds(net, lead, m / leaders, true, r);
                lf = "leaders: 2*T_c(" + leaders + ", " + bytes(m) + ") per round (eq. 2)";
            } else {
                int l = net.ringLevel(lead);
                lt = 2 * tr(leaders, m, net.alpha(l), net.w(l));
                lf = "leaders: 2*T_r(" + leaders + ", " + bytes(m) + ", " + secs(net.alpha(l)) + ", " + bw(net.w(l)) + ") (eq. 1)";
            }
            time += lt;
            f.append(f.isEmpty() ? "" : " + ").append(lf);
        }
        double sent = (double) (p0 - 1) / p0 * m + 2.0 * (leaders - 1) / leaders * m + (p0 > 1 ? m : 0);
        if (p0 > 1) {
            sent = Math.max(sent, (double) (p0 - 1) / p0 * m + m / p0 + (p0 > 2 ? m : 0));
        }
        return new Prediction(time, f.toString(), sent);
    }

    /** Hierarchical.java: per active level a reduce-scatter on the part left, all-gathers in reverse. */
    private static Prediction hierarchical(Problem p, Net net, boolean blueconnect) {
        Topology t = p.topology();
        List<Integer> active = new ArrayList<>();
        for (int i = 0; i < t.levels(); i++) {
            if (t.fanout(i) > 1) {
                active.add(i);
            }
        }
        double part = p.byteSize();
        double time = 0;
        double sent = 0;
        StringJoinerLite f = new StringJoinerLite(" + ");
        for (int level : active) {
            int pi = t.fanout(level);
            boolean rhd = blueconnect && active.size() > 1 && isPowerOfTwo(pi);
            double a = net.alpha(level);
            double w = net.w(level);
            time += 2 * (rhd ? tc(pi, part, a, w) : tr(pi, part, a, w));
            sent += 2.0 * (pi - 1) / pi * part;
            f.add("2*" + (rhd ? "T_c(" : "T_r(") + pi + ", " + bytes(part) + ", " + secs(a) + ", " + bw(w) + ")");
            part /= pi;
        }
        String eq = blueconnect ? (active.size() > 1 ? " (eq. 9)" : " (eq. 6: no hierarchy, one-level ring)") : " (eq. 9 with T_r at every level)";
        return new Prediction(time, f + eq, sent);
    }

    // ---- the network as seen by the formulas ------------------------------------------------

    /** Per-level crossing latency and bandwidth of a topology (see the class comment). */
    static final class Net {
        final Topology t;
        final double[] alpha;
        final double[] w;
        /** The outermost level with fan-out above 1 (0 when there is none). */
        final int outer;

        Net(Topology t) {
            this.t = t;
            int k = t.levels();
            alpha = new double[k];
            w = new double[k];
            double a = 0;
            double b = Double.POSITIVE_INFINITY;
            int o = 0;
            for (int i = 0; i < k; i++) {
                a = Math.max(a, t.level(i).latencySeconds());
                b = Math.min(b, t.level(i).bytesPerSecond());
                alpha[i] = a;
                w[i] = b;
                if (t.fanout(i) > 1) {
                    o = i;
                }
            }
            outer = o;
        }

        double alpha(int level) {
            return alpha[Math.max(0, level)];
        }

        double w(int level) {
            return w[Math.max(0, level)];
        }

        /** The outermost level at which ranks a and b have different coordinates; -1 when a == b. */
        int cross(int a, int b) {
            for (int i = t.levels() - 1; i >= 0; i--) {
                if (t.coordinate(a, i) != t.coordinate(b, i)) {
                    return i;
                }
            }
            return -1;
        }

        /** The outermost level crossed by any pair {@code group[k], group[k ^ mask]}. */
        int maskLevel(int[] group, int mask) {
            int l = -1;
            for (int k = 0; k < group.length; k++) {
                l = Math.max(l, cross(group[k], group[k ^ mask]));
            }
            return l;
        }

        /** The outermost level crossed by a ring over {@code group} in its order. */
        int ringLevel(int[] group) {
            int l = -1;
            for (int k = 0; k < group.length; k++) {
                l = Math.max(l, cross(group[k], group[(k + 1) % group.length]));
            }
            return l;
        }
    }

    // ---- helpers ------------------------------------------------------------------------------

    /** A minimal joiner that also reports emptiness. */
    private static final class StringJoinerLite {
        private final String sep;
        private final StringBuilder b = new StringBuilder();

        StringJoinerLite(String sep) {
            this.sep = sep;
        }

        void add(String s) {
            if (!b.isEmpty()) {
                b.append(sep);
            }
            b.append(s);
        }

        @Override
        public String toString() {
            return b.isEmpty() ? "0" : b.toString();
        }
    }

    private static Prediction zero(String why) {
        return new Prediction(0, why, 0);
    }

    static int[] identity(int n) {
        int[] g = new int[n];
        for (int i = 0; i < n; i++) {
            g[i] = i;
        }
        return g;
    }

    /** The ranks left after folding n down to the largest power of two (as Rhd and Butterfly fold). */
    static int[] foldedGroup(int n) {
        int pp = Integer.highestOneBit(n);
        int extra = n - pp;
        int[] g = new int[pp];
        for (int v = 0; v < pp; v++) {
            g[v] = v < extra ? 2 * v + 1 : v + extra;
        }
        return g;
    }

    static boolean isPowerOfTwo(int p) {
        return p > 0 && Integer.bitCount(p) == 1;
    }

    private static double lg(int p) {
        return isPowerOfTwo(p) ? Integer.numberOfTrailingZeros(p) : Math.log(p) / Math.log(2);
    }

    static int ceilLg(int n) {
        return n <= 1 ? 0 : 32 - Integer.numberOfLeadingZeros(n - 1);
    }

    private static double min(double[] w) {
        double m = Double.POSITIVE_INFINITY;
        for (double x : w) {
            m = Math.min(m, x);
        }
        return m;
    }

    private static void checkP(int p) {
        if (p < 1) {
            throw new IllegalArgumentException("rank count must be >= 1: " + p);
        }
    }

    private static void checkLevels(int[] p, double[] alpha, double[] w) {
        if (p.length != w.length || p.length != alpha.length) {
            throw new IllegalArgumentException(p.length + " fan-outs, " + alpha.length + " latencies, " + w.length + " bandwidths");
        }
        for (int x : p) {
            checkP(x);
        }
    }

    static String fanouts(Topology t) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < t.levels(); i++) {
            b.append(i == 0 ? "" : "x").append(t.fanout(i));
        }
        return b.toString();
    }

    static String secs(double s) {
        if (s == 0) {
            return "0s";
        }
        if (s < 1e-3) {
            return String.format(Locale.ROOT, "%.3gus", s * 1e6);
        }
        if (s < 1) {
            return String.format(Locale.ROOT, "%.3gms", s * 1e3);
        }
        return String.format(Locale.ROOT, "%.3gs", s);
    }

    static String bytes(double b) {
        if (b >= 1 << 30) {
            return String.format(Locale.ROOT, "%.3gGiB", b / (1 << 30));
        }
        if (b >= 1 << 20) {
            return String.format(Locale.ROOT, "%.3gMiB", b / (1 << 20));
        }
        if (b >= 1 << 10) {
            return String.format(Locale.ROOT, "%.3gKiB", b / (1 << 10));
        }
        return String.format(Locale.ROOT, "%.3gB", b);
    }

    static String bw(double w) {
        if (w >= 1e9) {
            return String.format(Locale.ROOT, "%.3gGB/s", w / 1e9);
        }
        if (w >= 1e6) {
            return String.format(Locale.ROOT, "%.3gMB/s", w / 1e6);
        }
        return String.format(Locale.ROOT, "%.3gKB/s", w / 1e3);
    }
}
