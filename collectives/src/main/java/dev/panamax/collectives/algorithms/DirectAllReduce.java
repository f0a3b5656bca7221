package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.Topology;
import dev.panamax.collectives.Collective;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.ScheduleBuilder;
import dev.panamax.collectives.schedule.Slice;

/**
 * Small all-reduces in one stage: every rank sends its whole vector to every other rank, then
 * folds the n vectors in rank order, so every rank computes the same bits. One hand-off of
 * latency instead of the ring's 2(n-1), at the price of (n-1) whole vectors per rank.
 */
public final class DirectAllReduce extends SingleCollectiveAlgorithm {
    /** The name this algorithm is selected by ({@code -a direct}). */
    public static final String NAME = "direct";

    public DirectAllReduce() {
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
        if (n == 1) {
            SchedulePatterns.alone(b, c);
            return b.build();
        }
        int inbox = b.scratch(c * n);
        Slice own = new Slice(inbox, r * c, c);
        b.stage("exchange").copy(Slice.send(0, c), own);
        for (int q = 0; q < n; q++) {
            if (q != r) {
                b.send(q, own).recv(q, new Slice(inbox, q * c, c));
            }
        }
        b.stage("fold").reduce(Slice.recv(0, c), new Slice(inbox, 0, c), new Slice(inbox, c, c));
        for (int q = 2; q < n; q++) {
            b.reduce(Slice.recv(0, c), Slice.recv(0, c), new Slice(inbox, q * c, c));
        }
        b.finish(Slice.recv(0, c), n);
        return b.build();
    }

    /** One stage, but n-1 messages each way, each paying the per-message latency. */
    @Override
    public Prediction predict(Problem p) {
        Network net = new Network(p.topology());
        int n = p.size();
        double m = p.byteSize();
        Topology t = p.topology();
        double sum = 0;
        long inner = 1;
        int g = net.outer();
        StringBuilder f = new StringBuilder();
        for (int i = 0; i < t.levels(); i++) {
            long upTo = inner * t.fanout(i);
            long peers = upTo - inner;
            if (peers > 0) {
                sum += peers * m / net.w(i);
                f.append(" + ").append(peers).append("*").append(Costs.bytes(m)).append("/").append(Costs.bw(net.w(i)));
            }
            inner = upTo;
        }
        // The per-message overhead (posting, polling, the peer being scheduled) is paid n-1 times,
        // which is what makes recursive doubling better than the direct exchange on busy CPUs from
        // 4 ranks on.
        return new Prediction((n - 1) * net.alpha(g) + sum,
                "(n-1)*alpha + (n-1)*N/w: " + (n - 1) + "*" + Costs.secs(net.alpha(g)) + f,
                (n - 1) * m);
    }
}
