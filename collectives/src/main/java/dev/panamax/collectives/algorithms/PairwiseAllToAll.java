package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.ScheduleBuilder;
import dev.panamax.collectives.schedule.Slice;

/**
 * Pairwise-exchange all-to-all: in stage s (1..n-1) rank r sends block r+s of its send buffer to
 * rank r+s and receives block r-s of its receive buffer from rank r-s, so each stage is a
 * permutation and no link carries two messages at once.
 */
public final class PairwiseAllToAll extends SingleCollectiveAlgorithm {
    /** The name this algorithm is selected by ({@code -a pairwise}). */
    public static final String NAME = "pairwise";

    public PairwiseAllToAll() {
        super(NAME, Collective.ALL_TO_ALL);
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
        b.stage("own block").copy(Slice.send(r * c, c), Slice.recv(r * c, c));
        for (int s = 1; s < n; s++) {
            int to = (r + s) % n;
            int from = Math.floorMod(r - s, n);
            b.stage("exchange " + s + "/" + (n - 1)).send(to, Slice.send(to * c, c))
                    .recv(from, Slice.recv(from * c, c));
        }
        return b.build();
    }

    /** n-1 exchanges of one block each, on the outermost level. */
    @Override
    public Prediction predict(Problem p) {
        Network net = new Network(p.topology());
        int g = net.outer();
        double c = p.byteSize();
        return new Prediction((p.size() - 1) * (net.alpha(g) + c / net.w(g)),
                "(n-1)*(alpha + C/w) = " + (p.size() - 1) + "*("
                + Costs.secs(net.alpha(g)) + " + " + Costs.bytes(c) + "/" + Costs.bw(net.w(g)) + ")",
                (p.size() - 1) * c);
    }
}
