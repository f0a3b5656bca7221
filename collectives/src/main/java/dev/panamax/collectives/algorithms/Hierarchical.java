package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.Topology;

import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.ScheduleBuilder;
import dev.panamax.collectives.schedule.Slice;

import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;

/**
 * All-reduce decomposed along the levels of a {@link Topology} ([BlueConnect] Algorithm 1): stage i
 * runs a reduce-scatter over the group c(r, w_i) of ranks that differ from r only at level i, on
 * the part of the vector that the earlier stages left to r, so the part shrinks by p_i at each
 * level; then the all-gathers run in reverse order. All groups of a level run their
 * reduce-scatters at the same time, each over its own links. Each level uses ring or recursive
 * halving/doubling, as chosen by {@link #levelKind}.
 *
 * <p>The groups are exactly the sub-communicators {@code split(color, key)} would make (color:
 * the other coordinates, key: the coordinate at level i); the schedule addresses their members by
 * their ranks in the parent, over the parent's links, so the whole decomposition is one schedule
 * that can be printed and simulated.
 */
abstract class Hierarchical implements Algorithm {

    /** How a level reduce-scatters and all-gathers. */
    enum Kind {
        RING, RHD;

        String label() {
            return this == RING ? Ring.NAME : HalvingDoubling.NAME;
        }
    }

    /** The implementation for a level of {@code fanout} ranks of topology {@code t}. */
    abstract Kind levelKind(Topology t, int fanout);

    /** Levels of fan-out above 1, innermost first; empty when none. */
    static List<Integer> activeLevels(Topology t) {
        List<Integer> l = new ArrayList<>();
        for (int i = 0; i < t.levels(); i++) {
            if (t.fanout(i) > 1) {
                l.add(i);
            }
        }
        return l;
    }

    @Override
    public String unsupported(Problem p) {
        return switch (p.collective()) {
            case ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER -> null;
            default -> name() + " has no " + p.collective().label() + " (only allreduce, reducescatter, allgather)";
        };
    }

    /** A one-line description: {@code blueconnect(3x2x2: ring,rhd,rhd)}. */
    String describe(Topology t) {
        StringJoiner f = new StringJoiner("x");
        StringJoiner k = new StringJoiner(",");
        for (int i : activeLevels(t)) {
            f.add(Integer.toString(t.fanout(i)));
            k.add(levelKind(t, t.fanout(i)).label());
        }
        return name() + "(" + f + ": " + k + ")";
    }

    @Override
    public Schedule build(Problem p) {
        ScheduleBuilder b = new ScheduleBuilder(p, describe(p.topology()));
        if (p.count() == 0) {
            return b.build();
        }
        List<Integer> levels = activeLevels(p.topology());
        if (levels.isEmpty() && p.collective() != Collective.ALL_GATHER) {
            SchedulePatterns.alone(b, p.count());
            return b.build();
        }
        switch (p.collective()) {
            case ALL_REDUCE -> allReduce(b, levels);
            case REDUCE_SCATTER -> reduceScatter(b, levels);
            case ALL_GATHER -> allGather(b, levels);
            default -> throw new IllegalArgumentException(unsupported(p));
        }
        return b.build();
    }

    /**
     * The parts of {@code [0, total)} this rank holds after each level's reduce-scatter, innermost
     * first: {@code {lo, len}} before level j at index j, the final part at index {@code levels.size()}.
     */
    private long[][] parts(Topology t, List<Integer> levels, int r, long total) {
        int k = levels.size();
        long[][] part = new long[k + 1][];
        part[0] = new long[] {0, total};
        for (int j = 0; j < k; j++) {
            int level = levels.get(j);
            int fanout = t.fanout(level);
            int me = t.coordinate(r, level);
            part[j + 1] = levelKind(t, fanout) == Kind.RHD ? SchedulePatterns.halvingOwned(part[j][0], part[j][1],
                    fanout, me) : SchedulePatterns.ringOwned(part[j][0], part[j][1], fanout, me);
        }
        return part;
    }

    /**
     * Each level's reduce-scatter, innermost first, on the part the earlier ones left: the first
     * reads this rank's input from {@code src}, the partial sums and the result go to {@code dst}.
     */
    private void reduceScatterLevels(ScheduleBuilder b, List<Integer> levels, long[][] part, int src, int dst) {
        Topology t = b.problem().topology();
        int r = b.rank();
        for (int j = 0; j < levels.size(); j++) {
            int level = levels.get(j);
            int[] group = t.group(r, level);
            int me = t.coordinate(r, level);
            Kind kind = levelKind(t, group.length);
            String label = "level " + level + " reduce-scatter (" + kind.label() + " over " + group.length + ")";
            int from = j == 0 ? src : dst;
            if (kind == Kind.RHD) {
                SchedulePatterns.halvingReduceScatter(b, label, group, me, part[j][0], part[j][1], from, dst);
            } else {
                SchedulePatterns.ringReduceScatter(b, label, group, me, part[j][0], part[j][1], from, dst);
            }
        }
    }

    /** Each level's all-gather in {@code buffer}, outermost first, retracing {@link #reduceScatterLevels}. */
    private void allGatherLevels(ScheduleBuilder b, List<Integer> levels, long[][] part, int buffer) {
        Topology t = b.problem().topology();
        int r = b.rank();
        for (int j = levels.size() - 1; j >= 0; j--) {
            int level = levels.get(j);
            int[] group = t.group(r, level);
            int me = t.coordinate(r, level);
            Kind kind = levelKind(t, group.length);
            String label = "level " + level + " all-gather (" + kind.label() + " over " + group.length + ")";
            if (kind == Kind.RHD) {
                SchedulePatterns.doublingAllGather(b, label, group, me, part[j][0], part[j][1], buffer);
            } else {
                SchedulePatterns.ringAllGather(b, label, group, me, part[j][0], part[j][1], buffer);
            }
        }
    }

    private void allReduce(ScheduleBuilder b, List<Integer> levels) {
        Problem p = b.problem();
        long[][] part = parts(p.topology(), levels, p.rank(), p.count());
        reduceScatterLevels(b, levels, part, Slice.SEND, Slice.RECV);
        long[] own = part[levels.size()];
        b.stage("finish").finish(Slice.recv(own[0], own[1]), p.size());
        allGatherLevels(b, levels, part, Slice.RECV);
    }

    /**
     * Where rank q's block lies in the order the levels split the vector: the stages cut it into
     * {@code p_0} parts by the level-0 coordinate (innermost first, so that the full vector crosses
     * only the fastest links), each part into {@code p_1} by the level-1 coordinate, and so on, so a
     * rank ends with the part at {@code sum_j coordinate_j * prod_{i>j} p_i}. NCCL's layout puts block
     * q at q; the two agree only when the innermost level is the outermost digit of the rank.
     */
    static int[] blockPositions(Topology t) {
        List<Integer> levels = activeLevels(t);
        int n = t.size();
        int[] pos = new int[n];
        for (int q = 0; q < n; q++) {
            int x = 0;
            for (int level : levels) {
                x = x * t.fanout(level) + t.coordinate(q, level);
            }
            pos[q] = x;
        }
        return pos;
    }

    /**
     * The first half of Algorithm 1 as a collective of its own, with NCCL's block semantics (send
     * holds n blocks of c, rank r ends with the reduction of block r): the blocks are first copied
     * into a work buffer in {@link #blockPositions} order (skipped when that order is NCCL's), then
     * each level, innermost first, reduce-scatters the part the earlier levels left to this rank in
     * place, leaving this rank's block, which is copied to recv.
     */
    private void reduceScatter(ScheduleBuilder b, List<Integer> levels) {
        Problem p = b.problem();
        long c = p.count();
        int n = p.size();
        int[] pos = blockPositions(p.topology());
        int work = b.scratch(n * c);
        int src = Slice.SEND;
        if (!SchedulePatterns.isIdentity(pos)) {
            SchedulePatterns.permuteBlocks(b, "permute blocks", pos, c, Slice.SEND, work);
            src = work;
        }
        long[][] part = parts(p.topology(), levels, p.rank(), n * c);
        reduceScatterLevels(b, levels, part, src, work);
        // the final part is pos[r] * c, c long: the parts divide evenly, n * c being c times the fan-outs' product
        long[] own = part[levels.size()];
        b.stage("own block").copy(new Slice(work, own[0], own[1]), Slice.recv(0, c));
        b.stage("finish").finish(Slice.recv(0, c), n);
    }

    /**
     * The second half of Algorithm 1 as a collective of its own (recv holds n blocks of c, block q
     * from rank q): this rank's block goes to its {@link #blockPositions} place, the levels
     * all-gather outermost first, retracing the reduce-scatter, and the blocks are copied back into
     * NCCL's order (all in recv, without the copies, when the two orders agree).
     */
    private void allGather(ScheduleBuilder b, List<Integer> levels) {
        Problem p = b.problem();
        long c = p.count();
        int n = p.size();
        int[] pos = blockPositions(p.topology());
        boolean identity = SchedulePatterns.isIdentity(pos);
        int buffer = identity ? Slice.RECV : b.scratch(n * c);
        b.stage("own block").copy(Slice.send(0, c), new Slice(buffer, pos[p.rank()] * c, c));
        allGatherLevels(b, levels, parts(p.topology(), levels, p.rank(), n * c), buffer);
        if (!identity) {
            SchedulePatterns.unpermuteBlocks(b, "unpermute blocks", pos, c, buffer, Slice.RECV);
        }
    }

    /**
     * Per active level a reduce-scatter on the part left, then the all-gathers in reverse: eq. 9 of
     * [BlueConnect]. Reduce-scatter and all-gather are its halves, one phase per level on the whole
     * n * N bytes (N the block), the block permutation's local copy not counted (the planner adds
     * the local copies from the schedule).
     */
    @Override
    public Prediction predict(Problem p) {
        Topology t = p.topology();
        Network net = new Network(t);
        List<Integer> active = activeLevels(t);
        boolean allReduce = p.collective() == Collective.ALL_REDUCE;
        double phases = allReduce ? 2 : 1;
        double part = allReduce ? p.byteSize() : (double) p.size() * p.byteSize();
        double time = 0;
        double sent = 0;
        StringJoiner f = new StringJoiner(" + ");
        f.setEmptyValue("0");
        for (int level : active) {
            int pi = t.fanout(level);
            boolean rhd = levelKind(t, pi) == Kind.RHD;
            double a = net.alpha(level);
            double w = net.w(level);
            time += phases * (rhd ? Costs.halvingDoublingPhaseTime(pi, part, a, w)
                    : Costs.ringPhaseTime(pi, part, a, w));
            sent += phases * (pi - 1) / pi * part;
            f.add((allReduce ? "2*" : "") + (rhd ? "T_c(" : "T_r(") + pi + ", " + Costs.bytes(part) + ", "
                    + Costs.secs(a) + ", " + Costs.bw(w) + ")");
            part /= pi;
        }
        String which = allReduce ? equation(active.size())
                : "(" + (p.collective() == Collective.REDUCE_SCATTER ? "first" : "second") + " half of "
                        + equation(active.size()) + ")";
        return new Prediction(time, f + " " + which, sent);
    }

    /** Which of the paper's equations the prediction is, for {@code activeLevels} levels of fan-out above 1. */
    abstract String equation(int activeLevels);

    @Override
    public boolean followsTopology() {
        return true;
    }
}
