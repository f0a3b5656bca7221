package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.ScheduleBuilder;
import dev.panamax.collectives.schedule.Slice;

/**
 * Recursive halving/doubling (Rabenseifner): all-reduce as a reduce-scatter by recursive halving
 * followed by an all-gather by recursive doubling, 2 log2(p) stages moving 2(p-1)/p of the
 * vector. Other rank counts fold first: with p the largest power of two below n, the first
 * 2(n-p) ranks pair up, the even one hands its vector to the odd one and gets the result back at
 * the end (two extra stages). Reduce-scatter and all-gather (NCCL layout) for power-of-two groups.
 */
public final class HalvingDoubling implements Algorithm {
    /** The name this algorithm is selected by ({@code -a rhd}). */
    public static final String NAME = "rhd";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String unsupported(Problem p) {
        return switch (p.collective()) {
            case ALL_REDUCE -> null;
            case REDUCE_SCATTER, ALL_GATHER -> Costs.isPowerOfTwo(p.size()) ? null
                    : "rhd " + p.collective().label() + " needs a power-of-two rank count, not " + p.size()
                    + " (ring works for any)";
            default -> "rhd has no " + p.collective().label();
        };
    }

    @Override
    public Schedule build(Problem p) {
        ScheduleBuilder b = new ScheduleBuilder(p, name());
        switch (p.collective()) {
            case ALL_REDUCE -> allReduce(b);
            case REDUCE_SCATTER -> reduceScatter(b);
            case ALL_GATHER -> allGather(b);
            default -> throw new IllegalArgumentException(unsupported(p));
        }
        return b.build();
    }

    private static void allReduce(ScheduleBuilder b) {
        Problem p = b.problem();
        int n = p.size();
        int r = p.rank();
        long c = p.count();
        if (c == 0) {
            return;
        }
        int v = Fold.before(b, "fold", r, n, c);
        if (v >= 0) {
            int[] g = SchedulePatterns.foldedGroup(n);
            int src = Fold.source(r, n);
            SchedulePatterns.halvingReduceScatter(b, "reduce-scatter", g, v, 0, c, src);
            long[] own = SchedulePatterns.halvingOwned(0, c, g.length, v);
            b.stage("finish").finish(Slice.recv(own[0], own[1]), n);
            SchedulePatterns.doublingAllGather(b, "all-gather", g, v, 0, c);
        }
        Fold.after(b, "unfold", r, n, c);
    }

    /** Halving over whole blocks: a scratch copy of the vector holds the partial sums, the last round lands in recv. */
    private static void reduceScatter(ScheduleBuilder b) {
        Problem p = b.problem();
        int n = p.size();
        int r = p.rank();
        long c = p.count();
        if (c == 0) {
            return;
        }
        if (n == 1) {
            SchedulePatterns.alone(b, c);
            return;
        }
        int work = b.scratch(c * n);
        int lo = 0;
        int hi = n;
        int rounds = Integer.numberOfTrailingZeros(n);
        int round = 0;
        for (int mask = n >> 1; mask > 0; mask >>= 1, round++) {
            int mid = (lo + hi) / 2;
            boolean keepLower = (r & mask) == 0;
            int kl = keepLower ? lo : mid;
            int kh = keepLower ? mid : hi;
            int gl = keepLower ? mid : lo;
            int gh = keepLower ? hi : mid;
            int from = round == 0 ? Slice.SEND : work;
            boolean last = round == rounds - 1;
            Slice into = last ? Slice.recv(0, c) : new Slice(work, kl * c, (kh - kl) * c);
            b.stage("halving " + (round + 1) + "/" + rounds)
                    .send(r ^ mask, new Slice(from, gl * c, (gh - gl) * c))
                    .recvReduce(r ^ mask, into, new Slice(from, kl * c, (kh - kl) * c));
            lo = kl;
            hi = kh;
        }
        b.stage("finish").finish(Slice.recv(0, c), n);
    }

    /** Recursive doubling over blocks: in round k a rank swaps its 2^k gathered blocks with rank ^ 2^k. */
    private static void allGather(ScheduleBuilder b) {
        Problem p = b.problem();
        int n = p.size();
        int r = p.rank();
        long c = p.count();
        if (c == 0) {
            return;
        }
        b.stage("own block").copy(Slice.send(0, c), Slice.recv(r * c, c));
        // Halving n*c elements over a power of two leaves rank r block r: doubling retraces it.
        SchedulePatterns.doublingAllGather(b, "all-gather", SchedulePatterns.all(n), r, 0, n * c);
    }

    /** The folding of extra ranks around a power-of-two core, shared with the butterfly. */
    static final class Fold {
        private Fold() {
        }

        /**
         * Even ranks below 2(n-p) send their vector to the odd rank above; the odd one folds it into
         * recv. Returns this rank's index in the power-of-two core, or -1 when it sits out.
         */
        static int before(ScheduleBuilder b, String label, int r, int n, long c) {
            int v = SchedulePatterns.foldedIndex(r, n);
            int extra = n - Integer.highestOneBit(n);
            if (r < 2 * extra) {
                b.stage(label);
                if (v < 0) {
                    b.send(r + 1, Slice.send(0, c));
                } else {
                    // only this rank computes the sum, so every rank gets the same bits
                    b.recvReduce(r - 1, Slice.recv(0, c), Slice.send(0, c));
                }
            }
            return v;
        }

        /** Where a core rank's own contributions are: in recv after folding, else in send. */
        static int source(int r, int n) {
            int extra = n - Integer.highestOneBit(n);
            return r < 2 * extra ? Slice.RECV : Slice.SEND;
        }

        /** The odd rank returns the result to the even one that sat out. */
        static void after(ScheduleBuilder b, String label, int r, int n, long c) {
            int extra = n - Integer.highestOneBit(n);
            if (r < 2 * extra) {
                b.stage(label);
                if (r % 2 == 1) {
                    b.send(r - 1, Slice.recv(0, c));
                } else {
                    b.recv(r + 1, Slice.recv(0, c));
                }
            }
        }
    }

    /**
     * Eq. 2 of [BlueConnect] round by round, each round on the level its pairs cross; a rank count
     * that is not a power of two adds the fold and unfold of the whole vector.
     */
    @Override
    public Prediction predict(Problem p) {
        Network net = new Network(p.topology());
        int n = p.size();
        double m = p.byteSize();
        switch (p.collective()) {
            case REDUCE_SCATTER, ALL_GATHER -> {
                StringBuilder f = new StringBuilder();
                double t = Costs.halvingRounds(net, SchedulePatterns.all(n), m,
                        p.collective() == Collective.REDUCE_SCATTER, f);
                return new Prediction(t, "T_c(" + n + ", " + n + "*" + Costs.bytes(m) + ") per round (eq. 2): " + f,
                        (n - 1) * m);
            }
            case ALL_REDUCE -> {
                int pp = Integer.highestOneBit(n);
                StringBuilder f = new StringBuilder();
                double t = 2 * Costs.halvingRounds(net, SchedulePatterns.foldedGroup(n), m / pp, true, f);
                String formula = "2*T_c(" + pp + ", " + Costs.bytes(m) + ") per round (eq. 2): 2*[" + f + "]";
                double sent = 2.0 * (pp - 1) / pp * m;
                if (pp != n) {
                    t += 2 * Costs.foldTime(net, n, m);
                    formula += " + fold/unfold 2*(alpha + N/w)";
                    sent += m;
                }
                return new Prediction(t, formula, sent);
            }
            default -> {
                return null;
            }
        }
    }
}
