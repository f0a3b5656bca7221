package dev.panamax.collectives.plan;

import dev.panamax.collectives.Topology;
import dev.panamax.collectives.algorithms.Costs;
import dev.panamax.collectives.algorithms.Network;
import dev.panamax.collectives.algorithms.Prediction;
import dev.panamax.collectives.schedule.Problem;

import java.util.Arrays;

/**
 * The cost formulas of the papers as published, to check the live model ({@link CostModel}) and
 * the documentation against: [BlueConnect] eq. 1-10 and [ASC-WFBP] eq. 3 and 7-11 (see
 * docs/reference/references.md). The planner does not use them; each algorithm predicts its own
 * time from the same building blocks ({@link Costs}).
 *
 * <p>Units: sizes in bytes, times in seconds, bandwidths in bytes per second. Arithmetic is not
 * counted, as in [BlueConnect] section 2.2.
 */
public final class PaperFormulas {
    private PaperFormulas() {
    }

    // ---- [BlueConnect]: eq. 4-10 (eq. 1-3 are Costs.ringPhaseTime, halvingDoublingPhaseTime, bestPhaseTime)

    /** Eq. 4: broadcast as scatter + all-gather: {@code T_c + T_r}. */
    public static double broadcast(int p, double n, double alpha, double w) {
        return Costs.halvingDoublingPhaseTime(p, n, alpha, w) + Costs.ringPhaseTime(p, n, alpha, w);
    }

    /** Eq. 4: reduce as reduce-scatter + gather, the same cost as {@link #broadcast}. */
    public static double reduce(int p, double n, double alpha, double w) {
        return broadcast(p, n, alpha, w);
    }

    /** Eq. 5: one-level ring all-reduce, {@code 2(|P|-1) (alpha + (N/|P|) / min W)}. */
    public static double oneLevel(int size, double n, double alpha, double[] w) {
        Costs.checkRanks(size);
        return 2.0 * (size - 1) * (alpha + n / size / Arrays.stream(w).min().orElse(Double.POSITIVE_INFINITY));
    }

    /** Eq. 6: the same as eq. 5 written {@code 2 T_r(|P|, N, alpha, min W)}. */
    public static double oneLevel(int size, double n, double alpha, double minW) {
        return 2 * Costs.ringPhaseTime(size, n, alpha, minW);
    }

    /**
     * Eq. 7: the two-level all-reduce, {@code T_reduce(p0, N, alpha, w0) + T_broadcast(p0, N,
     * alpha, w0) + 2 T_r/c(|P|/p0, N, alpha, min W)}; with the paper's single alpha, pass the same
     * value for both latencies.
     */
    public static double twoLevel(int p0, int size, double n, double alphaNode, double w0, double alphaOuter,
            double minW) {
        Costs.checkRanks(p0);
        if (size % p0 != 0) {
            throw new IllegalArgumentException(size + " ranks do not fill nodes of " + p0);
        }
        return reduce(p0, n, alphaNode, w0) + broadcast(p0, n, alphaNode, w0) + 2
                * Costs.bestPhaseTime(size / p0, n, alphaOuter, minW);
    }

    /**
     * Eq. 9: BlueConnect on a fat tree, {@code 2 sum_i T_r/c(p_i, N / prod_{j<i} p_j, alpha,
     * min_{0<=j<=i} w_j / prod_{k<j} p_k)}, where {@code w} are the paper's per-level switch
     * bandwidths (aggregate over the ranks below, see {@link Network}).
     */
    public static double blueConnect(int[] p, double n, double alpha, double[] w) {
        double[] a = new double[p.length];
        Arrays.fill(a, alpha);
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
        Arrays.fill(a, alpha);
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
            t += 2 * Costs.bestPhaseTime(p[i], part, alpha[i], stageW[i]);
            part /= p[i];
        }
        return t;
    }

    // ---- [ASC-WFBP]: a + b m and contention -----------------------------------------------------

    /** Eq. 3: one all-reduce of m bytes, {@code a + b m}. */
    public static double allReduce(double a, double b, double m) {
        return a + b * m;
    }

    /** Eq. 8 (for k = 2): k all-reduces of m bytes one after the other, {@code k (a + b m)}. */
    public static double sequentialAllReduces(int k, double a, double b, double m) {
        return k * allReduce(a, b, m);
    }

    /**
     * Section III (the denominator of eq. 9): k all-reduces of m bytes started together all finish
     * after {@code a + gamma b m}, gamma (1 <= gamma <= k, measured for that k) modelling their
     * contention for the links. The startup a is paid once.
     */
    public static double simultaneousAllReduces(double a, double b, double gamma, double m) {
        return a + gamma * b * m;
    }

    /** Eq. 7 (k = 1, gamma = 1) and eq. 9 (k = 2): overall throughput {@code k m / (a + gamma b m)}. */
    public static double throughput(int k, double a, double b, double gamma, double m) {
        return k * m / simultaneousAllReduces(a, b, gamma, m);
    }

    /** Eq. 11: the extra time of each of the simultaneous all-reduces, {@code (gamma - 1) b m}. */
    public static double contentionPenalty(double b, double gamma, double m) {
        return (gamma - 1) * b * m;
    }

    // ---- [BlueConnect]'s formulas on a topology -------------------------------------------------

    /** Eq. 6 on {@code p}'s topology: the one-level ring with the latency and bandwidth of the outermost level. */
    public static Prediction oneLevel(Problem p) {
        Network net = new Network(p.topology());
        double n = p.byteSize();
        if (p.size() == 1) {
            return Prediction.zero("nothing to do on one rank");
        }
        int g = net.outer();
        return new Prediction(oneLevel(p.size(), n, net.alpha(g), net.w(g)),
                "2*T_r(" + p.size() + ", " + Costs.bytes(n) + ", "
                + Costs.secs(net.alpha(g)) + ", " + Costs.bw(net.w(g)) + ") (eq. 6)",
                2.0 * (p.size() - 1) / p.size() * n);
    }

    /**
     * Eq. 7 on {@code p}'s topology: p0 = level 0's fan-out on level 0's link, |P|/p0 leaders
     * crossing the outermost level (min W in per-rank terms).
     */
    public static Prediction twoLevel(Problem p) {
        Network net = new Network(p.topology());
        double n = p.byteSize();
        int p0 = p.topology().fanout(0);
        int leaders = p.size() / p0;
        if (p.size() == 1) {
            return Prediction.zero("nothing to do on one rank");
        }
        int g = net.outer();
        double t = twoLevel(p0, p.size(), n, net.alpha(0), net.w(0), net.alpha(g), net.w(g));
        return new Prediction(t, "T_reduce(" + p0 + ", N, " + Costs.secs(net.alpha(0)) + ", " + Costs.bw(net.w(0))
                + ") + T_broadcast(same) + 2*T_r/c(" + leaders + ", " + Costs.bytes(n) + ", " + Costs.secs(net.alpha(g))
                + ", "
                + Costs.bw(net.w(g)) + ") (eq. 7)", 2.0 * (p0 - 1) / p0 * n + 2.0 * (leaders - 1) / leaders * n);
    }

    /** Eq. 9 on {@code p}'s topology, the paper's w_j taken as b_j * prod_{k<j} p_k (see {@link Network}). */
    public static Prediction blueConnect(Problem p) {
        Topology t = p.topology();
        int k = t.levels();
        int[] f = t.fanouts();
        double[] a = new double[k];
        double[] w = new double[k];
        double prod = 1;
        Network net = new Network(t);
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
        return new Prediction(blueConnect(f, n, a, w),
                "2*sum_i T_r/c(p_i, N/prod p_j, alpha_i, min_j<=i w_j/prod_k<j p_k) over "
                + Costs.fanouts(t) + " (eq. 9)", bytes);
    }

    private static void checkLevels(int[] p, double[] alpha, double[] w) {
        if (p.length != w.length || p.length != alpha.length) {
            throw new IllegalArgumentException(p.length + " fan-outs, " + alpha.length + " latencies, " + w.length
                    + " bandwidths");
        }
        for (int x : p) {
            Costs.checkRanks(x);
        }
    }
}
