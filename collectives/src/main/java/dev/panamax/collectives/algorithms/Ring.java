package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.ScheduleBuilder;
import dev.panamax.collectives.schedule.Slice;

/**
 * Ring algorithms ([RingAllReduce]): reduce-scatter in n-1 stages where each rank
 * passes one chunk to its right neighbour and folds the chunk from its left one, then all-gather
 * in n-1 stages. Each rank sends 2(n-1)/n of the vector whatever n is. Also the ring
 * reduce-scatter and all-gather with NCCL's block layout, a pipelined chain broadcast, and reduce
 * as a ring reduce-scatter followed by a gather at the root. Counts need not divide by n.
 */
public final class Ring implements Algorithm {
    /** The name this algorithm is selected by ({@code -a ring}). */
    public static final String NAME = "ring";

    /** Broadcast pipelines in pieces of this many bytes (rounded down to whole elements). */
    static final long BROADCAST_PIECE_BYTES = 512 * 1024;

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String unsupported(Problem p) {
        return switch (p.collective()) {
            case ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, BROADCAST, REDUCE -> null;
            default -> "ring has no " + p.collective().label() + " (use pairwise or dissemination)";
        };
    }

    @Override
    public Schedule build(Problem p) {
        ScheduleBuilder b = new ScheduleBuilder(p, name());
        switch (p.collective()) {
            case ALL_REDUCE -> allReduce(b);
            case REDUCE_SCATTER -> reduceScatter(b);
            case ALL_GATHER -> allGather(b);
            case BROADCAST -> chainBroadcast(b, SchedulePatterns.all(p.size()), p.rank(), p.root(), 0, p.count(),
                    p.elementBytes(),
                    p.rank() == p.root() ? Slice.SEND : Slice.RECV);
            case REDUCE -> reduce(b);
            default -> throw new IllegalArgumentException(unsupported(p));
        }
        return b.build();
    }

    private static void allReduce(ScheduleBuilder b) {
        Problem p = b.problem();
        int n = p.size();
        long c = p.count();
        if (c == 0) {
            return;
        }
        int[] g = SchedulePatterns.all(n);
        SchedulePatterns.ringReduceScatter(b, "reduce-scatter", g, p.rank(), 0, c, Slice.SEND);
        long[] own = SchedulePatterns.ringOwned(0, c, n, p.rank());
        b.stage("finish").finish(Slice.recv(own[0], own[1]), n);
        SchedulePatterns.ringAllGather(b, "all-gather", g, p.rank(), 0, c);
    }

    /** NCCL layout: send holds n blocks of count; partial sums alternate between two scratch blocks. */
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
        int right = (r + 1) % n;
        int left = (r - 1 + n) % n;
        int[] tmp = n > 2 ? new int[] {b.scratch(c), b.scratch(c)} : new int[0];
        for (int s = 0; s < n - 1; s++) {
            int sb = Math.floorMod(r - s - 1, n);
            int rb = Math.floorMod(r - s - 2, n);
            Slice from = s == 0 ? Slice.send(sb * c, c) : new Slice(tmp[(s - 1) % 2], 0, c);
            Slice into = s == n - 2 ? Slice.recv(0, c) : new Slice(tmp[s % 2], 0, c);
            b.stage("reduce-scatter step " + (s + 1) + "/" + (n - 1))
                    .send(right, from)
                    .recvReduce(left, into, Slice.send(rb * c, c));
        }
        b.stage("finish").finish(Slice.recv(0, c), n);
    }

    private static void allGather(ScheduleBuilder b) {
        Problem p = b.problem();
        int n = p.size();
        int r = p.rank();
        long c = p.count();
        if (c == 0) {
            return;
        }
        b.stage("own block").copy(Slice.send(0, c), Slice.recv(r * c, c));
        // Block q of n*c elements is exactly ring chunk q, which member q owns.
        SchedulePatterns.ringAllGather(b, "all-gather", SchedulePatterns.all(n), r, 0, n * c);
    }

    /**
     * Pipelined chain broadcast of {@code [lo, lo+len)} from group member {@code root} along the
     * group order: stage k receives piece k and forwards piece k-1, so every hop is busy at once.
     * {@code data} is where this rank's copy lives (the send buffer at the root of a broadcast).
     */
    static void chainBroadcast(ScheduleBuilder b, int[] group, int me, int root, long lo, long len, int elementBytes,
            int data) {
        int n = group.length;
        if (len == 0) {
            return;
        }
        if (me == root && data != Slice.RECV) {
            b.stage("root copy").copy(new Slice(data, lo, len), Slice.recv(lo, len));
        }
        if (n == 1) {
            return;
        }
        long piece = Math.max(1, BROADCAST_PIECE_BYTES / elementBytes);
        int pieces = (int) ((len + piece - 1) / piece);
        int pos = Math.floorMod(me - root, n);
        int prev = pos == 0 ? -1 : group[Math.floorMod(me - 1, n)];
        int next = pos == n - 1 ? -1 : group[(me + 1) % n];
        for (int k = 0; k <= pieces; k++) {
            b.stage("chain piece " + k + "/" + pieces);
            if (prev >= 0 && k < pieces) {
                long off = lo + k * piece;
                b.recv(prev, Slice.recv(off, Math.min(piece, lo + len - off)));
            }
            if (next >= 0 && k > 0) {
                long off = lo + (k - 1) * piece;
                b.send(next, new Slice(me == root ? data : Slice.RECV, off, Math.min(piece, lo + len - off)));
            }
        }
    }

    /** Ring reduce-scatter into a work buffer (recv at the root), then the root gathers the chunks. */
    private static void reduce(ScheduleBuilder b) {
        Problem p = b.problem();
        int n = p.size();
        int r = p.rank();
        int root = p.root();
        long c = p.count();
        if (c == 0) {
            return;
        }
        if (n == 1) {
            SchedulePatterns.alone(b, c);
            return;
        }
        // Non-roots need not pass a receive buffer: they reduce into scratch.
        int work = r == root ? Slice.RECV : b.scratch(c);
        SchedulePatterns.ringReduceScatter(b, "reduce-scatter", SchedulePatterns.all(n), r, 0, c, Slice.SEND, work);
        long[] own = SchedulePatterns.ringOwned(0, c, n, r);
        b.stage("finish").finish(new Slice(work, own[0], own[1]), n);
        b.stage("gather at " + root);
        if (r != root) {
            b.send(root, new Slice(work, own[0], own[1]));
        } else {
            for (int q = 0; q < n; q++) {
                if (q != root) {
                    long[] o = SchedulePatterns.ringOwned(0, c, n, q);
                    b.recv(q, Slice.recv(o[0], o[1]));
                }
            }
        }
    }

    /**
     * Eq. 1 and 6 of [BlueConnect] with the latency and bandwidth of the outermost level the ring
     * crosses; reduce adds the gather at the root, broadcast is a pipelined chain.
     */
    @Override
    public Prediction predict(Problem p) {
        Network net = new Network(p.topology());
        int n = p.size();
        int g = net.outer();
        double a = net.alpha(g);
        double w = net.w(g);
        double m = p.byteSize();
        String aw = Costs.secs(a) + ", " + Costs.bw(w);
        return switch (p.collective()) {
            case ALL_REDUCE -> new Prediction(2 * Costs.ringPhaseTime(n, m, a, w),
                    "2*T_r(" + n + ", " + Costs.bytes(m) + ", " + aw + ") (eq. 6)", 2.0 * (n - 1) / n * m);
            case REDUCE_SCATTER, ALL_GATHER -> new Prediction(Costs.ringPhaseTime(n, n * m, a, w),
                    "T_r(" + n + ", " + n + "*" + Costs.bytes(m) + ", " + aw + ") (eq. 1)", (n - 1) * m);
            case REDUCE -> new Prediction(Costs.ringPhaseTime(n, m, a, w) + a + (double) (n - 1) / n * m / w,
                    "T_r(" + n + ", " + Costs.bytes(m) + ", " + aw + ") (eq. 1) + gather at root: alpha + (n-1)/n*N/w",
                            m);
            case BROADCAST -> {
                long piece = Math.max(1, BROADCAST_PIECE_BYTES / p.elementBytes());
                long pieces = (p.count() + piece - 1) / piece;
                double hops = pieces + n - 2;
                double s = m / pieces;
                yield new Prediction(hops * (a + s / w),
                        "chain of " + pieces + " piece(s): (pieces+n-2)*(alpha + N/pieces/w) = "
                        + (long) hops + "*(" + Costs.secs(a) + " + " + Costs.bytes(s) + "/" + Costs.bw(w) + ")", m);
            }
            default -> null;
        };
    }
}
