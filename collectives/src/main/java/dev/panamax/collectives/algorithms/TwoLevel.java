package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.ScheduleBuilder;
import dev.panamax.collectives.schedule.Slice;

/**
 * The two-level all-reduce of paper 000 (eq. 7): the ranks of a node (topology level 0) reduce to
 * their leader (coordinate 0), the leaders all-reduce among themselves (recursive halving/doubling
 * for a power-of-two count of leaders, ring otherwise: eq. 3), and each leader broadcasts the
 * result back into its node. Within a node the reduce is a ring reduce-scatter plus a gather at
 * the leader and the broadcast a pipelined chain. Non-leaders idle while the leaders work.
 */
public final class TwoLevel extends SingleCollectiveAlgorithm {
    /** The name this algorithm is selected by ({@code -a two-level}). */
    public static final String NAME = "two-level";

    public TwoLevel() {
        super(NAME, Collective.ALL_REDUCE);
    }

    @Override
    public Schedule build(Problem p) {
        Topology t = p.topology();
        int n = p.size();
        int r = p.rank();
        long c = p.count();
        int p0 = t.fanout(0);
        int leaders = n / p0;
        ScheduleBuilder b = new ScheduleBuilder(p, name() + "(" + p0 + " per node, " + leaders + " leaders: "
                + (SchedulePatterns.isPowerOfTwo(leaders) ? "rhd" : "ring") + ")");
        if (c == 0) {
            return b.build();
        }
        int[] node = t.group(r, 0);
        int me = t.coordinate(r, 0);
        // 1. reduce to the leader: ring reduce-scatter in the node, then the leader gathers the parts.
        SchedulePatterns.ringReduceScatter(b, "node reduce-scatter", node, me, 0, c, Slice.SEND);
        if (p0 > 1) {
            b.stage("gather at leader");
            if (me != 0) {
                long[] own = SchedulePatterns.ringOwned(0, c, p0, me);
                b.send(node[0], Slice.recv(own[0], own[1]));
            } else {
                for (int q = 1; q < p0; q++) {
                    long[] o = SchedulePatterns.ringOwned(0, c, p0, q);
                    b.recv(node[q], Slice.recv(o[0], o[1]));
                }
            }
        }
        // 2. leaders all-reduce the node sums (in place in recv).
        if (me == 0) {
            int[] lead = new int[leaders];
            int li = -1;
            for (int i = 0, k = 0; i < n; i++) {
                int q = t.rankAt(i);
                if (t.coordinate(q, 0) == 0) {
                    if (q == r) {
                        li = k;
                    }
                    lead[k++] = q;
                }
            }
            if (SchedulePatterns.isPowerOfTwo(leaders)) {
                SchedulePatterns.halvingReduceScatter(b, "leaders reduce-scatter", lead, li, 0, c, Slice.RECV);
                long[] own = SchedulePatterns.halvingOwned(0, c, leaders, li);
                b.stage("finish").finish(Slice.recv(own[0], own[1]), n);
                SchedulePatterns.doublingAllGather(b, "leaders all-gather", lead, li, 0, c);
            } else {
                SchedulePatterns.ringReduceScatter(b, "leaders reduce-scatter", lead, li, 0, c, Slice.RECV);
                long[] own = SchedulePatterns.ringOwned(0, c, leaders, li);
                b.stage("finish").finish(Slice.recv(own[0], own[1]), n);
                SchedulePatterns.ringAllGather(b, "leaders all-gather", lead, li, 0, c);
            }
        }
        // 3. broadcast back into the node.
        Ring.chainBroadcast(b, node, me, 0, 0, c, p.elementBytes(), Slice.RECV);
        return b.build();
    }
}
