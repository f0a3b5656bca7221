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
 *
 * <p>Reduce-scatter and all-gather the same way, with NCCL's blocks: the reduce-scatter reduces the
 * n blocks to the leader, the leaders reduce-scatter so that each gets its node's blocks, and each
 * leader sends every member its block; the all-gather gathers a node's blocks at its leader, the
 * leaders all-gather, and each leader broadcasts the whole vector into its node. The leaders'
 * exchange needs a node's blocks side by side, so the blocks are put in node-major order by a
 * local copy (skipped where ranks of a node are already numbered together).
 */
public final class TwoLevel implements Algorithm {
    /** The name this algorithm is selected by ({@code -a two-level}). */
    public static final String NAME = "two-level";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String unsupported(Problem p) {
        return switch (p.collective()) {
            case ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER -> null;
            default -> NAME + " has no " + p.collective().label() + " (only allreduce, reducescatter, allgather)";
        };
    }

    @Override
    public Schedule build(Problem p) {
        Topology t = p.topology();
        int n = p.size();
        int p0 = t.fanout(0);
        int leaders = n / p0;
        ScheduleBuilder b = new ScheduleBuilder(p, name() + "(" + p0 + " per node, " + leaders + " leaders: "
                + (Costs.isPowerOfTwo(leaders) ? HalvingDoubling.NAME : Ring.NAME) + ")");
        if (p.count() == 0) {
            return b.build();
        }
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
        Topology t = p.topology();
        int n = p.size();
        int r = p.rank();
        long c = p.count();
        int p0 = t.fanout(0);
        int leaders = n / p0;
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
            int[] lead = leaders(t);
            int li = leaderIndex(t, lead, r);
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
    }

    /** The leaders (coordinate 0 at level 0), in placement order. */
    private static int[] leaders(Topology t) {
        int n = t.size();
        int[] lead = new int[n / t.fanout(0)];
        for (int i = 0, k = 0; i < n; i++) {
            int q = t.rankAt(i);
            if (t.coordinate(q, 0) == 0) {
                lead[k++] = q;
            }
        }
        return lead;
    }

    /** The index among {@code lead} of rank r's leader (the first member of its node). */
    private static int leaderIndex(Topology t, int[] lead, int r) {
        int leader = t.group(r, 0)[0];
        for (int k = 0; k < lead.length; k++) {
            if (lead[k] == leader) {
                return k;
            }
        }
        throw new IllegalStateException("rank " + r + "'s leader " + leader + " is not among the leaders");
    }

    /** Where rank q's block goes in node-major order: its leader's index times p0, plus its node coordinate. */
    private static int[] nodeMajor(Topology t) {
        int n = t.size();
        int p0 = t.fanout(0);
        int[] lead = leaders(t);
        int[] pos = new int[n];
        for (int q = 0; q < n; q++) {
            pos[q] = leaderIndex(t, lead, q) * p0 + t.coordinate(q, 0);
        }
        return pos;
    }

    /**
     * Node-major copy of the n send blocks; ring reduce-scatter of them in the node and gather at the
     * leader; the leaders' reduce-scatter (rhd or ring), leaving leader l the blocks of node l; the
     * leader sends each member its block.
     */
    private static void reduceScatter(ScheduleBuilder b) {
        Problem p = b.problem();
        Topology t = p.topology();
        int n = p.size();
        int r = p.rank();
        long c = p.count();
        int p0 = t.fanout(0);
        int leaderCount = n / p0;
        if (n == 1) {
            SchedulePatterns.alone(b, c);
            return;
        }
        int[] pos = nodeMajor(t);
        int work = b.scratch(n * c);
        int src = Slice.SEND;
        if (!SchedulePatterns.isIdentity(pos)) {
            SchedulePatterns.permuteBlocks(b, "node-major blocks", pos, c, Slice.SEND, work);
            src = work;
        }
        int[] node = t.group(r, 0);
        int me = t.coordinate(r, 0);
        long total = n * c;
        if (p0 > 1) {
            SchedulePatterns.ringReduceScatter(b, "node reduce-scatter", node, me, 0, total, src, work);
        } else if (src != work) {
            b.stage("own blocks").copy(Slice.send(0, total), new Slice(work, 0, total));
        }
        if (p0 > 1) {
            b.stage("gather at leader");
            if (me != 0) {
                long[] own = SchedulePatterns.ringOwned(0, total, p0, me);
                b.send(node[0], new Slice(work, own[0], own[1]));
            } else {
                for (int q = 1; q < p0; q++) {
                    long[] o = SchedulePatterns.ringOwned(0, total, p0, q);
                    b.recv(node[q], new Slice(work, o[0], o[1]));
                }
            }
        }
        if (me == 0) {
            int[] lead = leaders(t);
            int li = leaderIndex(t, lead, r);
            if (leaderCount == 1) {
                // one node: the node's reduction is the whole result
            } else if (Costs.isPowerOfTwo(leaderCount)) {
                SchedulePatterns.halvingReduceScatter(b, "leaders reduce-scatter", lead, li, 0, total, work, work);
            } else {
                SchedulePatterns.ringReduceScatter(b, "leaders reduce-scatter", lead, li, 0, total, work, work);
            }
            // leader li now holds its node's p0 blocks at [li * p0 * c, (li + 1) * p0 * c)
            b.stage("scatter in node").copy(new Slice(work, pos[r] * c, c), Slice.recv(0, c));
            for (int q = 1; q < p0; q++) {
                b.send(node[q], new Slice(work, pos[node[q]] * c, c));
            }
        } else {
            b.stage("scatter in node").recv(node[0], Slice.recv(0, c));
        }
        b.stage("finish").finish(Slice.recv(0, c), n);
    }

    /**
     * The members send their blocks to the leader, which puts them in node-major order; the leaders
     * all-gather (rhd or ring); each leader restores NCCL's order into recv and broadcasts it into
     * the node by a pipelined chain.
     */
    private static void allGather(ScheduleBuilder b) {
        Problem p = b.problem();
        Topology t = p.topology();
        int n = p.size();
        int r = p.rank();
        long c = p.count();
        int p0 = t.fanout(0);
        int leaderCount = n / p0;
        int[] node = t.group(r, 0);
        int me = t.coordinate(r, 0);
        long total = n * c;
        if (me != 0) {
            b.stage("gather at leader").send(node[0], Slice.send(0, c));
        } else {
            int[] pos = nodeMajor(t);
            boolean identity = SchedulePatterns.isIdentity(pos);
            int buffer = identity ? Slice.RECV : b.scratch(total);
            b.stage("gather at leader").copy(Slice.send(0, c), new Slice(buffer, pos[r] * c, c));
            for (int q = 1; q < p0; q++) {
                b.recv(node[q], new Slice(buffer, pos[node[q]] * c, c));
            }
            int[] lead = leaders(t);
            int li = leaderIndex(t, lead, r);
            if (Costs.isPowerOfTwo(leaderCount)) {
                SchedulePatterns.doublingAllGather(b, "leaders all-gather", lead, li, 0, total, buffer);
            } else {
                SchedulePatterns.ringAllGather(b, "leaders all-gather", lead, li, 0, total, buffer);
            }
            if (!identity) {
                SchedulePatterns.unpermuteBlocks(b, "NCCL order", pos, c, buffer, Slice.RECV);
            }
        }
        Ring.chainBroadcast(b, node, me, 0, 0, total, p.elementBytes(), Slice.RECV);
    }

    @Override
    public Prediction predict(Problem p) {
        return p.collective() == Collective.ALL_REDUCE ? predictAllReduce(p) : predictHalf(p);
    }

    /**
     * Reduce-scatter: the node's ring reduce-scatter and gather at the leader of the n blocks
     * (N = n * C bytes), the leaders' one phase on N, the scatter of the members' blocks. All-gather:
     * the gather of the blocks at the leader, the leaders' phase on N, the chain broadcast of N in the
     * node. The node-major copy is not counted here (the planner adds the copies).
     */
    private Prediction predictHalf(Problem p) {
        Network net = new Network(p.topology());
        Topology t = p.topology();
        int n = p.size();
        int p0 = t.fanout(0);
        int leaders = n / p0;
        double m = p.byteSize();
        double total = n * m;
        double a0 = net.alpha(0);
        double w0 = net.w(0);
        boolean rs = p.collective() == Collective.REDUCE_SCATTER;
        double time = 0;
        StringBuilder f = new StringBuilder();
        if (p0 > 1) {
            if (rs) {
                time += Costs.ringPhaseTime(p0, total, a0, w0) + a0 + (double) (p0 - 1) / p0 * total / w0
                        + a0 + (p0 - 1) * m / w0;
                f.append("node: T_r(").append(p0).append(", ").append(Costs.bytes(total)).append(") + gather alpha + ")
                        .append("(p0-1)/p0*nC/w + scatter alpha + (p0-1)*C/w");
            } else {
                long piece = Math.max(1, Ring.BROADCAST_PIECE_BYTES / p.elementBytes());
                long pieces = (n * p.count() + piece - 1) / piece;
                time += a0 + (p0 - 1) * m / w0 + (pieces + p0 - 2) * (a0 + total / pieces / w0);
                f.append("node: gather alpha + (p0-1)*C/w + chain (pieces+p0-2)*(alpha + nC/pieces/w)");
            }
        }
        if (leaders > 1) {
            int[] lead = leaders(t);
            double lt;
            String lf;
            if (Costs.isPowerOfTwo(leaders)) {
                lt = Costs.halvingRounds(net, lead, total / leaders, rs, new StringBuilder());
                lf = "leaders: T_c(" + leaders + ", " + Costs.bytes(total) + ") (eq. 2)";
            } else {
                int l = net.ringLevel(lead);
                lt = Costs.ringPhaseTime(leaders, total, net.alpha(l), net.w(l));
                lf = "leaders: T_r(" + leaders + ", " + Costs.bytes(total) + ", " + Costs.secs(net.alpha(l)) + ", "
                        + Costs.bw(net.w(l)) + ") (eq. 1)";
            }
            time += lt;
            f.append(f.isEmpty() ? "" : " + ").append(lf);
        }
        double leaderPart = (double) (leaders - 1) / leaders * total;
        double sent;
        if (rs) {
            double node = p0 > 1 ? (double) (p0 - 1) / p0 * total : 0;
            sent = Math.max(node + leaderPart + (p0 - 1) * m, p0 > 1 ? node + total / p0 : 0);
        } else {
            double member = p0 > 1 ? m + (p0 > 2 ? total : 0) : 0;
            sent = Math.max(leaderPart + (p0 > 1 ? total : 0), member);
        }
        return new Prediction(time, f.toString(), sent);
    }

    /**
     * Ring reduce-scatter in the node (level 0), gather of the parts at the leader, the leaders' rhd
     * (power-of-two count) or ring all-reduce, pipelined chain broadcast in the node.
     */
    private Prediction predictAllReduce(Problem p) {
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
            int[] lead = leaders(t);
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
