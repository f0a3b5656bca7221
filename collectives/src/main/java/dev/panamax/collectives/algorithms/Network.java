package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.Topology;

/**
 * A topology as the cost formulas see it: per level, the latency and bandwidth of a message that
 * crosses that level.
 *
 * <p>{@link Topology.Level#bytesPerSecond()} b_i is the bandwidth ONE rank's stream gets at level
 * i while all the ranks under that level communicate at the same time (per-rank NIC or multi-rail
 * semantics; the emulation gives every rank its own rate-limited link). A message between two
 * ranks whose coordinates differ at level i and none above "crosses" level i and is taken to
 * traverse levels 0..i, so it moves at {@code w(i) = min_{j <= i} b_j} after a latency
 * {@code alpha(i) = max_{j <= i} alpha_j}. A flat topology (one level) gives the same alpha and w to
 * everything.
 *
 * <p>Mapping onto [BlueConnect]: the paper's w_j is the aggregate uplink bandwidth of a level-j
 * switch port of a fat tree, shared by the {@code p_0 * ... * p_{j-1}} ranks below it, so its
 * {@code w_j / prod_{k<j} p_k} is exactly our b_j (the division is already folded in): eq. 9's
 * stage-i bandwidth {@code min_{j<=i} w_j / prod_{k<j} p_k} becomes {@code min_{j<=i} b_j = w(i)}.
 * Eq. 6's {@code min W} becomes w(L) for the outermost level L the ring crosses, and eq. 7's leader
 * streams cross the outermost level too. On a torus (eq. 10) the p_0 ranks of a node share
 * dedicated links, so b_j = w_j / p_0 for j >= 1 and b_0 = w_0, giving the same per-rank rule. The
 * paper has one alpha; here each stage uses the alpha of the level it crosses.
 */
public final class Network {
    private final Topology topology;
    private final double[] alpha;
    private final double[] w;
    private final int outer;

    public Network(Topology topology) {
        this.topology = topology;
        int k = topology.levels();
        alpha = new double[k];
        w = new double[k];
        double a = 0;
        double b = Double.POSITIVE_INFINITY;
        int o = 0;
        for (int i = 0; i < k; i++) {
            a = Math.max(a, topology.level(i).latencySeconds());
            b = Math.min(b, topology.level(i).bytesPerSecond());
            alpha[i] = a;
            w[i] = b;
            if (topology.fanout(i) > 1) {
                o = i;
            }
        }
        outer = o;
    }

    public Topology topology() {
        return topology;
    }

    /** The outermost level with fan-out above 1 (0 when there is none). */
    public int outer() {
        return outer;
    }

    /** The latency of a message crossing {@code level} (-1: within a rank, taken as level 0). */
    public double alpha(int level) {
        return alpha[Math.max(0, level)];
    }

    /** The bandwidth of a message crossing {@code level}, in bytes per second (-1 as level 0). */
    public double w(int level) {
        return w[Math.max(0, level)];
    }

    /** The outermost level at which ranks a and b have different coordinates; -1 when a == b. */
    public int cross(int a, int b) {
        for (int i = topology.levels() - 1; i >= 0; i--) {
            if (topology.coordinate(a, i) != topology.coordinate(b, i)) {
                return i;
            }
        }
        return -1;
    }

    /** The outermost level crossed by any pair {@code group[k], group[k ^ mask]}. */
    public int maskLevel(int[] group, int mask) {
        int l = -1;
        for (int k = 0; k < group.length; k++) {
            l = Math.max(l, cross(group[k], group[k ^ mask]));
        }
        return l;
    }

    /** The outermost level crossed by a ring over {@code group} in its order. */
    public int ringLevel(int[] group) {
        int l = -1;
        for (int k = 0; k < group.length; k++) {
            l = Math.max(l, cross(group[k], group[(k + 1) % group.length]));
        }
        return l;
    }
}
