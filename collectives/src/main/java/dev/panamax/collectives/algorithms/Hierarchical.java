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
        return p.collective() == Collective.ALL_REDUCE ? null : name() + " has only allreduce";
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
        Topology t = p.topology();
        List<Integer> levels = activeLevels(t);
        ScheduleBuilder b = new ScheduleBuilder(p, describe(t));
        long c = p.count();
        int n = p.size();
        int r = p.rank();
        if (c == 0) {
            return b.build();
        }
        if (levels.isEmpty()) {
            SchedulePatterns.alone(b, c);
            return b.build();
        }
        int k = levels.size();
        long[] lo = new long[k + 1];
        long[] len = new long[k + 1];
        lo[0] = 0;
        len[0] = c;
        for (int j = 0; j < k; j++) {
            int level = levels.get(j);
            int[] group = t.group(r, level);
            int me = t.coordinate(r, level);
            Kind kind = levelKind(t, group.length);
            String label = "level " + level + " reduce-scatter (" + kind.label() + " over " + group.length + ")";
            int src = j == 0 ? Slice.SEND : Slice.RECV;
            long[] own;
            if (kind == Kind.RHD) {
                SchedulePatterns.halvingReduceScatter(b, label, group, me, lo[j], len[j], src);
                own = SchedulePatterns.halvingOwned(lo[j], len[j], group.length, me);
            } else {
                SchedulePatterns.ringReduceScatter(b, label, group, me, lo[j], len[j], src);
                own = SchedulePatterns.ringOwned(lo[j], len[j], group.length, me);
            }
            lo[j + 1] = own[0];
            len[j + 1] = own[1];
        }
        b.stage("finish").finish(Slice.recv(lo[k], len[k]), n);
        for (int j = k - 1; j >= 0; j--) {
            int level = levels.get(j);
            int[] group = t.group(r, level);
            int me = t.coordinate(r, level);
            Kind kind = levelKind(t, group.length);
            String label = "level " + level + " all-gather (" + kind.label() + " over " + group.length + ")";
            if (kind == Kind.RHD) {
                SchedulePatterns.doublingAllGather(b, label, group, me, lo[j], len[j]);
            } else {
                SchedulePatterns.ringAllGather(b, label, group, me, lo[j], len[j]);
            }
        }
        return b.build();
    }

    /** Per active level a reduce-scatter on the part left, then the all-gathers in reverse: eq. 9 of [BlueConnect]. */
    @Override
    public Prediction predict(Problem p) {
        Topology t = p.topology();
        Network net = new Network(t);
        List<Integer> active = activeLevels(t);
        double part = p.byteSize();
        double time = 0;
        double sent = 0;
        StringJoiner f = new StringJoiner(" + ");
        f.setEmptyValue("0");
        for (int level : active) {
            int pi = t.fanout(level);
            boolean rhd = levelKind(t, pi) == Kind.RHD;
            double a = net.alpha(level);
            double w = net.w(level);
            time += 2 * (rhd ? Costs.halvingDoublingPhaseTime(pi, part, a, w) : Costs.ringPhaseTime(pi, part, a, w));
            sent += 2.0 * (pi - 1) / pi * part;
            f.add("2*" + (rhd ? "T_c(" : "T_r(") + pi + ", " + Costs.bytes(part) + ", " + Costs.secs(a) + ", "
                    + Costs.bw(w) + ")");
            part /= pi;
        }
        return new Prediction(time, f + " " + equation(active.size()), sent);
    }

    /** Which of the paper's equations the prediction is, for {@code activeLevels} levels of fan-out above 1. */
    abstract String equation(int activeLevels);

    @Override
    public boolean followsTopology() {
        return true;
    }
}
