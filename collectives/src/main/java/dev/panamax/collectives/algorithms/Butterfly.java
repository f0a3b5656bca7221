package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.ScheduleBuilder;
import dev.panamax.collectives.schedule.Slice;

/**
 * Butterfly (distance-doubling) all-reduce, [TaskAllReduce]: log2(p) stages, in stage k a rank swaps its
 * whole partial vector with rank ^ 2^k and folds the two, lower rank's operand first so that both
 * partners compute the same bits. Latency-optimal for small vectors (log2 p hand-offs), but each
 * rank moves log2(p) whole vectors. Other rank counts fold first as in {@link HalvingDoubling}.
 */
public final class Butterfly extends SingleCollectiveAlgorithm {
    /** The name this algorithm is selected by ({@code -a butterfly}). */
    public static final String NAME = "butterfly";

    public Butterfly() {
        super(NAME, Collective.ALL_REDUCE);
    }

    @Override
    public Schedule build(Problem p) {
        ScheduleBuilder b = new ScheduleBuilder(p, name());
        int n = p.size();
        int r = p.rank();
        long c = p.count();
        if (c == 0) {
            return b.build();
        }
        int v = HalvingDoubling.Fold.before(b, "fold", r, n, c);
        if (v >= 0) {
            int[] g = SchedulePatterns.foldedGroup(n);
            int pp = g.length;
            int cur = HalvingDoubling.Fold.source(r, n);
            int theirs = pp > 1 ? b.scratch(c) : -1;
            int rounds = Integer.numberOfTrailingZeros(pp);
            for (int k = 0; k < rounds; k++) {
                int partnerIndex = v ^ (1 << k);
                int partner = g[partnerIndex];
                b.stage("butterfly " + (k + 1) + "/" + rounds);
                if (k > 0) {
                    fold(b, k - 1, v, cur, theirs, c);
                    cur = Slice.RECV;
                }
                b.send(partner, new Slice(cur, 0, c)).recv(partner, new Slice(theirs, 0, c));
            }
            b.stage("combine");
            if (rounds > 0) {
                fold(b, rounds - 1, v, cur, theirs, c);
            } else {
                b.copy(new Slice(cur, 0, c), Slice.recv(0, c));
            }
            b.finish(Slice.recv(0, c), n);
        }
        HalvingDoubling.Fold.after(b, "unfold", r, n, c);
        return b.build();
    }

    /** recv = lower op higher, where the partner of round k is lower when its bit k is set in us. */
    private static void fold(ScheduleBuilder b, int k, int v, int cur, int theirs, long c) {
        boolean partnerLower = (v & (1 << k)) != 0;
        Slice mine = new Slice(cur, 0, c);
        Slice other = new Slice(theirs, 0, c);
        b.reduce(Slice.recv(0, c), partnerLower ? other : mine, partnerLower ? mine : other);
    }

    /** lg(p') whole-vector exchanges, each on the level its pairs cross, plus the fold and unfold. */
    @Override
    public Prediction predict(Problem p) {
        Network net = new Network(p.topology());
        int n = p.size();
        double m = p.byteSize();
        int pp = Integer.highestOneBit(n);
        int[] g = SchedulePatterns.foldedGroup(n);
        double t = 0;
        int rounds = 0;
        for (int mask = 1; mask < pp; mask <<= 1, rounds++) {
            int l = net.maskLevel(g, mask);
            t += net.alpha(l) + m / net.w(l);
        }
        String formula = "lg(p')*(alpha + N/w), p'=" + pp + ": " + rounds + " whole-vector swaps of " + Costs.bytes(m);
        double sent = rounds * m;
        if (pp != n) {
            t += 2 * Costs.foldTime(net, n, m);
            formula += " + fold/unfold 2*(alpha + N/w)";
            sent += m;
        }
        return new Prediction(t, formula, sent);
    }
}
