package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.ScheduleBuilder;
import dev.panamax.collectives.schedule.Slice;

/**
 * The two-level all-reduce of [BlueConnect] (eq. 7): the ranks of a node (topology level 0) reduce to
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
                + (Costs.isPowerOfTwo(leaders) ? HalvingDoubling.NAME : Ring.NAME) + ")");
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
            if (Costs.isPowerOfTwo(leaders)) {
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

    /**
     * Ring reduce-scatter in the node (level 0), gather of the parts at the leader, the leaders' rhd
     * (power-of-two count) or ring all-reduce, pipelined chain broadcast in the node.
     */
    @Override
    public Prediction predict(Problem p) {
        Network net = new Network(p.topology());
        Topology t = p.topology();
        int n = p.size();
        int p0 = t.fanout(0);
        int leaders = n / p0;
        double m = p.byteSize();
        double a0 = net.alpha(0);
        double w0 = net.w(0);
        double time = 0;
        StringBuilder f = new StringBuilder();
        if (p0 > 1) {
            double rs = Costs.ringPhaseTime(p0, m, a0, w0);
            double gather = a0 + (double) (p0 - 1) / p0 * m / w0;
            long piece = Math.max(1, Ring.BROADCAST_PIECE_BYTES / p.elementBytes());
            long pieces = (p.count() + piece - 1) / piece;
            double chain = (pieces + p0 - 2) * (a0 + m / pieces / w0);
            time += rs + gather + chain;
            f.append("node: T_r(").append(p0).append(", ").append(Costs.bytes(m)).append(", ").append(Costs.secs(a0))
                    .append(", ")
                    .append(Costs.bw(w0))
                    .append(") (eq. 1) + gather alpha + (p0-1)/p0*N/w + chain (pieces+p0-2)*(alpha + N/pieces/w)");
        }
        if (leaders > 1) {
            int[] lead = new int[leaders];
            for (int i = 0, k = 0; i < n; i++) {
                int q = t.rankAt(i);
                if (t.coordinate(q, 0) == 0) {
                    lead[k++] = q;
                }
            }
            double lt;
            String lf;
            if (Costs.isPowerOfTwo(leaders)) {
                lt = 2 * Costs.halvingRounds(net, lead, m / leaders, true, new StringBuilder());
                lf = "leaders: 2*T_c(" + leaders + ", " + Costs.bytes(m) + ") per round (eq. 2)";
            } else {
                int l = net.ringLevel(lead);
                lt = 2 * Costs.ringPhaseTime(leaders, m, net.alpha(l), net.w(l));
                lf = "leaders: 2*T_r(" + leaders + ", " + Costs.bytes(m) + ", " + Costs.secs(net.alpha(l)) + ", "
                        + Costs.bw(net.w(l))
                        + ") (eq. 1)";
            }
            time += lt;
            f.append(f.isEmpty() ? "" : " + ").append(lf);
        }
        double sent = (double) (p0 - 1) / p0 * m + 2.0 * (leaders - 1) / leaders * m + (p0 > 1 ? m : 0);
        if (p0 > 1) {
            sent = Math.max(sent, (double) (p0 - 1) / p0 * m + m / p0 + (p0 > 2 ? m : 0));
        }
        return new Prediction(time, f.toString(), sent);
    }

    @Override
    public boolean followsTopology() {
        return true;
    }
}
