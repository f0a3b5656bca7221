package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.ScheduleBuilder;
import dev.panamax.collectives.schedule.Slice;

/**
 * Binomial trees: all-reduce as a tree reduce to rank 0 followed by a tree broadcast (paper
 * 002's baseline), 2 ceil(log2 n) stages each moving the whole vector. Its halves also serve as
 * the tree reduce and tree broadcast to any root.
 */
public final class ReduceBroadcast implements Algorithm {
    /** The name this algorithm is selected by ({@code -a reduce-bcast}). */
    public static final String NAME = "reduce-bcast";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String unsupported(Problem p) {
        return switch (p.collective()) {
            case ALL_REDUCE, REDUCE, BROADCAST -> null;
            default -> "reduce-bcast has no " + p.collective().label();
        };
    }

    @Override
    public Schedule build(Problem p) {
        ScheduleBuilder b = new ScheduleBuilder(p, name());
        int n = p.size();
        long c = p.count();
        if (c == 0) {
            return b.build();
        }
        int[] g = SchedulePatterns.all(n);
        switch (p.collective()) {
            case ALL_REDUCE -> {
                treeReduce(b, g, p.rank(), 0, 0, c, Slice.SEND, Slice.RECV, n);
                treeBroadcast(b, g, p.rank(), 0, 0, c, Slice.RECV);
            }
            case REDUCE -> {
                int work = p.rank() == p.root() ? Slice.RECV : b.scratch(c);
                treeReduce(b, g, p.rank(), p.root(), 0, c, Slice.SEND, work, n);
            }
            case BROADCAST -> {
                if (p.rank() == p.root()) {
                    b.stage("root copy").copy(Slice.send(0, c), Slice.recv(0, c));
                }
                treeBroadcast(b, g, p.rank(), p.root(), 0, c, Slice.RECV);
            }
            default -> throw new IllegalArgumentException(unsupported(p));
        }
        return b.build();
    }

    /**
     * Binomial reduce of {@code [lo, lo+len)} to group member {@code root}: relative rank v folds in
     * its children v+1, v+2, v+4, ... (below its lowest set bit) in that order, then sends to
     * v - lowbit(v). The result is in {@code work} at the root, finished for {@code contributions}
     * inputs; {@code contributions == 0} leaves it unfinished (a partial reduction).
     */
    static void treeReduce(ScheduleBuilder b, int[] group, int me, int root, long lo, long len, int src, int work,
            int contributions) {
        int n = group.length;
        int v = Math.floorMod(me - root, n);
        int tmp = n > 1 ? b.scratch(len) : -1;
        int acc = src;
        int limit = v == 0 ? Integer.highestOneBit(Math.max(1, n - 1)) << 1 : Integer.lowestOneBit(v);
        int stage = 0;
        for (int m = 1; m < limit && v + m < n; m <<= 1) {
            int child = group[(v + m + root) % n];
            b.stage("tree reduce " + (++stage));
            if (stage > 1) {
                b.reduce(new Slice(work, lo, len), new Slice(acc, lo, len), new Slice(tmp, 0, len));
                acc = work;
            }
            b.recv(child, new Slice(tmp, 0, len));
        }
        b.stage("tree reduce " + (++stage));
        if (stage > 1) {
            b.reduce(new Slice(work, lo, len), new Slice(acc, lo, len), new Slice(tmp, 0, len));
            acc = work;
        }
        if (v == 0) {
            if (acc != work) {
                b.copy(new Slice(acc, lo, len), new Slice(work, lo, len));
            }
            if (contributions > 0) {
                b.finish(new Slice(work, lo, len), contributions);
            }
        } else {
            b.send(group[(v - Integer.lowestOneBit(v) + root) % n], new Slice(acc, lo, len));
        }
    }

    /** Binomial broadcast of {@code [lo, lo+len)} of {@code data} from group member {@code root}; farthest child first.
     * */
    static void treeBroadcast(ScheduleBuilder b, int[] group, int me, int root, long lo, long len, int data) {
        int n = group.length;
        if (n == 1) {
            return;
        }
        int v = Math.floorMod(me - root, n);
        if (v != 0) {
            b.stage("tree broadcast receive").recv(group[(v - Integer.highestOneBit(v) + root) % n], new Slice(data, lo,
                    len));
        }
        int first = v == 0 ? 1 : Integer.highestOneBit(v) << 1;
        int top = Integer.highestOneBit(n - 1);
        if (first <= top && v + first < n) {
            b.stage("tree broadcast send");
            for (int m = top; m >= first; m >>= 1) {
                if (v + m < n) {
                    b.send(group[(v + m + root) % n], new Slice(data, lo, len));
                }
            }
        }
    }

    /** Binomial trees: ceil(lg n) whole-vector steps each way, on the outermost level. */
    @Override
    public Prediction predict(Problem p) {
        Network net = new Network(p.topology());
        int n = p.size();
        int g = net.outer();
        double m = p.byteSize();
        int d = Costs.ceilLg(n);
        double one = d * (net.alpha(g) + m / net.w(g));
        String step = d + "*(" + Costs.secs(net.alpha(g)) + " + " + Costs.bytes(m) + "/" + Costs.bw(net.w(g)) + ")";
        return switch (p.collective()) {
            case ALL_REDUCE -> new Prediction(2 * one, "binomial reduce + broadcast: 2*ceil(lg n)*(alpha + N/w) = 2*"
                    + step, d * m);
            case REDUCE -> new Prediction(one, "binomial reduce: ceil(lg n)*(alpha + N/w) = " + step, m);
            case BROADCAST -> new Prediction(one, "binomial broadcast: ceil(lg n)*(alpha + N/w) = " + step, d * m);
            default -> null;
        };
    }
}
