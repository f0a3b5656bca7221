package dev.panamax.collectives.plan;

import java.util.Objects;

/**
 * Calibration of the cost model from measurements ({@code panamax-perf --calibrate}). Pure
 * functions of their arguments.
 *
 * <ul>
 *   <li>{@link #linear}: the all-reduce cost {@code t = alpha + beta * m} of [ASC-WFBP] eq. 3
 *       ({@code a + b * m}), by ordinary least squares over (bytes, seconds) pairs; the
 *       bandwidth is {@code 1 / beta}.
 *   <li>{@link #contention}: the contention factor gamma of [ASC-WFBP] section III: k all-reduces
 *       of m bytes started at the same time all finish after {@code a + gamma * b * m}
 *       (the denominator of eq. 9), where a and b are those of one all-reduce alone.
 * </ul>
 */
public final class LinearFit {
    private LinearFit() {
    }

    /**
     * {@code t = alpha + beta * m}: alpha in seconds, beta in seconds per byte, and the coefficient
     * of determination {@code r2} of the fit (1 for points on the line).
     */
    public record Line(double alpha, double beta, double r2) {
        /** The fitted bandwidth in bytes per second, {@code 1 / beta} (infinite for beta <= 0). */
        public double bandwidth() {
            return beta > 0 ? 1 / beta : Double.POSITIVE_INFINITY;
        }

        /** The line's time for {@code bytes}. */
        public double seconds(double bytes) {
            return alpha + beta * bytes;
        }
    }

    /**
     * The contention factor of [ASC-WFBP]: {@code gamma} such that k simultaneous all-reduces of m
     * bytes take {@code single.alpha() + gamma * single.beta() * m}; {@code r2} is how well that
     * model explains the simultaneous times (1 when exact). gamma = 1 is perfect multiplexing,
     * gamma = k no bandwidth gain at all (only the startup is saved).
     */
    public record Contention(double gamma, Line single, double r2) {
    }

    /**
     * Least-squares fit of {@code seconds[i] = alpha + beta * bytes[i]} ([ASC-WFBP] eq. 3).
     * Needs at least two distinct sizes. Computed on centred values, so points that lie on a line
     * give it back up to rounding.
     *
     * @throws IllegalArgumentException on arrays of different lengths, fewer than two distinct
     *     sizes, or non-finite values
     */
    public static Line linear(double[] bytes, double[] seconds) {
        check(bytes, seconds);
        int n = bytes.length;
        double mx = 0;
        double my = 0;
        for (int i = 0; i < n; i++) {
            mx += bytes[i];
            my += seconds[i];
        }
        mx /= n;
        my /= n;
        double sxx = 0;
        double sxy = 0;
        double syy = 0;
        for (int i = 0; i < n; i++) {
            double dx = bytes[i] - mx;
            double dy = seconds[i] - my;
            sxx += dx * dx;
            sxy += dx * dy;
            syy += dy * dy;
        }
        if (!(sxx > 0)) {
            throw new IllegalArgumentException("fitting a line needs at least two distinct message sizes");
        }
        double beta = sxy / sxx;
        double alpha = my - beta * mx;
        double res = 0;
        for (int i = 0; i < n; i++) {
            double e = seconds[i] - (alpha + beta * bytes[i]);
            res += e * e;
        }
        return new Line(alpha, beta, r2(res, syy));
    }

    /**
     * gamma from times of one all-reduce alone ({@code oneSeconds}) and of k started together
     * ({@code simultaneousSeconds}, until the last of them finishes), both per size in
     * {@code bytes}: fits the single line first ({@link #linear}), then gamma by least squares
     * on {@code simultaneous - a = gamma * b * m}.
     */
    public static Contention contention(double[] bytes, double[] oneSeconds, double[] simultaneousSeconds) {
        return contention(linear(bytes, oneSeconds), bytes, simultaneousSeconds);
    }

    /**
     * gamma given the single all-reduce's line {@code single} (a = alpha, b = beta) and the times
     * of k simultaneous all-reduces of {@code bytes[i]} each: the least-squares solution of
     * {@code simultaneousSeconds[i] - a = gamma * b * bytes[i]}, i.e.
     * {@code gamma = sum((t_i - a) b m_i) / sum((b m_i)^2)}.
     */
    public static Contention contention(Line single, double[] bytes, double[] simultaneousSeconds) {
        Objects.requireNonNull(single, "single");
        check(bytes, simultaneousSeconds);
        if (!(single.beta() > 0)) {
            throw new IllegalArgumentException("the single all-reduce's fitted beta must be > 0 to define gamma: "
                    + single.beta());
        }
        double num = 0;
        double den = 0;
        for (int i = 0; i < bytes.length; i++) {
            double x = single.beta() * bytes[i];
            num += (simultaneousSeconds[i] - single.alpha()) * x;
            den += x * x;
        }
        if (!(den > 0)) {
            throw new IllegalArgumentException("fitting gamma needs a non-empty message size");
        }
        double gamma = num / den;
        double my = 0;
        for (double t : simultaneousSeconds) {
            my += t;
        }
        my /= simultaneousSeconds.length;
        double res = 0;
        double tot = 0;
        for (int i = 0; i < bytes.length; i++) {
            double e = simultaneousSeconds[i] - (single.alpha() + gamma * single.beta() * bytes[i]);
            res += e * e;
            tot += (simultaneousSeconds[i] - my) * (simultaneousSeconds[i] - my);
        }
        return new Contention(gamma, single, r2(res, tot));
    }

    private static double r2(double residual, double total) {
        if (total > 0) {
            return 1 - residual / total;
        }
        return residual == 0 ? 1 : 0;
    }

    private static void check(double[] x, double[] y) {
        Objects.requireNonNull(x, "bytes");
        Objects.requireNonNull(y, "seconds");
        if (x.length != y.length) {
            throw new IllegalArgumentException(x.length + " sizes but " + y.length + " times");
        }
        if (x.length < 2) {
            throw new IllegalArgumentException("a fit needs at least two measurements, got " + x.length);
        }
        for (int i = 0; i < x.length; i++) {
            if (!Double.isFinite(x[i]) || !Double.isFinite(y[i])) {
                throw new IllegalArgumentException("measurement " + i + " is not finite: " + x[i] + " B, " + y[i]
                        + " s");
            }
        }
    }
}
