package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.Topology;

import java.util.Locale;

/**
 * The building blocks of the algorithms' cost models ({@link Algorithm#predict}): the alpha-beta
 * times of a ring phase and of a halving/doubling phase from [BlueConnect] (eq. 1-3), the rounds
 * of halving or doubling over a group of ranks on a {@link Network}, and the formatting of the
 * formulas the predictions carry. Units: sizes in bytes, times in seconds, bandwidths in bytes per
 * second. Arithmetic (reductions, copies) is not counted here (the planner's {@code CostModel}
 * adds it).
 */
public final class Costs {
    private Costs() {
    }

    /**
     * [BlueConnect] eq. 1: a ring reduce-scatter or all-gather of n bytes over p ranks,
     * {@code (p-1) alpha + (p-1)/p * n/w}.
     */
    public static double ringPhaseTime(int p, double n, double alpha, double w) {
        checkRanks(p);
        return (p - 1) * alpha + (double) (p - 1) / p * n / w;
    }

    /**
     * [BlueConnect] eq. 2: a recursive halving reduce-scatter or doubling all-gather,
     * {@code lg(p) alpha + (p-1)/p * n/w} (exact lg for powers of two).
     */
    public static double halvingDoublingPhaseTime(int p, double n, double alpha, double w) {
        checkRanks(p);
        return lg(p) * alpha + (double) (p - 1) / p * n / w;
    }

    /** [BlueConnect] eq. 3: {@link #halvingDoublingPhaseTime} when p is a power of two, else {@link #ringPhaseTime}. */
    public static double bestPhaseTime(int p, double n, double alpha, double w) {
        return isPowerOfTwo(p) ? halvingDoublingPhaseTime(p, n, alpha, w) : ringPhaseTime(p, n, alpha, w);
    }

    /**
     * Rounds of recursive halving (or doubling) over {@code group} (a power of two of ranks),
     * {@code sum_k alpha_k + blocks_k * unit / w_k} where round k exchanges {@code blocks_k} units
     * across the level its pairs cross; appends each round's term to {@code formula}.
     *
     * @param halvingOrder true: the halving order (largest exchange first), false: doubling
     */
    public static double halvingRounds(Network net, int[] group, double unit, boolean halvingOrder,
            StringBuilder formula) {
        int pp = group.length;
        double t = 0;
        for (int mask = halvingOrder ? pp >> 1 : 1; halvingOrder ? mask > 0 : mask < pp; mask =
                halvingOrder ? mask >> 1 : mask << 1) {
            int l = net.maskLevel(group, mask);
            t += net.alpha(l) + mask * unit / net.w(l);
            formula.append(formula.isEmpty() ? "" : " + ").append("(").append(secs(net.alpha(l))).append(" + ")
                    .append(bytes(mask * unit)).append("/").append(bw(net.w(l))).append(")");
        }
        return t;
    }

    /**
     * One fold (or unfold) stage of a non-power-of-two group: the whole vector of {@code m} bytes
     * between the paired ranks below {@code 2(n - p')}, as {@link HalvingDoubling} and
     * {@link Butterfly} fold.
     */
    public static double foldTime(Network net, int n, double m) {
        int extra = n - Integer.highestOneBit(n);
        int l = -1;
        for (int i = 0; i < extra; i++) {
            l = Math.max(l, net.cross(2 * i, 2 * i + 1));
        }
        return net.alpha(l) + m / net.w(l);
    }

    public static boolean isPowerOfTwo(int p) {
        return p > 0 && Integer.bitCount(p) == 1;
    }

    /** log2(p): exact for powers of two. */
    public static double lg(int p) {
        return isPowerOfTwo(p) ? Integer.numberOfTrailingZeros(p) : Math.log(p) / Math.log(2);
    }

    /** ceil(log2(n)), 0 for n <= 1. */
    public static int ceilLg(int n) {
        return n <= 1 ? 0 : 32 - Integer.numberOfLeadingZeros(n - 1);
    }

    /** The fan-outs of a topology, innermost first: {@code 3x2x2}. */
    public static String fanouts(Topology t) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < t.levels(); i++) {
            b.append(i == 0 ? "" : "x").append(t.fanout(i));
        }
        return b.toString();
    }

    /** A time for a formula: {@code 1.5us}, {@code 20ms}. */
    public static String secs(double s) {
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

    /** A size for a formula: {@code 4KiB}, {@code 1.5MiB}. */
    public static String bytes(double b) {
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

    /** A bandwidth for a formula: {@code 5GB/s}. */
    public static String bw(double w) {
        if (w >= 1e9) {
            return String.format(Locale.ROOT, "%.3gGB/s", w / 1e9);
        }
        if (w >= 1e6) {
            return String.format(Locale.ROOT, "%.3gMB/s", w / 1e6);
        }
        return String.format(Locale.ROOT, "%.3gKB/s", w / 1e3);
    }

    /** {@code p >= 1}, or a clear error. */
    public static void checkRanks(int p) {
        if (p < 1) {
            throw new IllegalArgumentException("rank count must be >= 1: " + p);
        }
    }
}
