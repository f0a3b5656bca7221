package dev.panamax.collectives.algorithms;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.ScheduleBuilder;
import dev.panamax.collectives.schedule.Slice;

/**
 * Dissemination barrier: ceil(log2 n) stages of empty messages, in stage k to rank r + 2^k and
 * from rank r - 2^k; after the last stage every rank has heard, directly or not, from all.
 */
public final class DisseminationBarrier extends SingleCollectiveAlgorithm {
    /** The name this algorithm is selected by ({@code -a dissemination}). */
    public static final String NAME = "dissemination";

    public DisseminationBarrier() {
        super(NAME, Collective.BARRIER);
    }

    @Override
    public Schedule build(Problem p) {
        ScheduleBuilder b = new ScheduleBuilder(p, name());
        int n = p.size();
        int r = p.rank();
        int rounds = 32 - Integer.numberOfLeadingZeros(Math.max(0, n - 1));
        for (int k = 1, s = 1; k < n; k <<= 1, s++) {
            b.stage("round " + s + "/" + rounds).send((r + k) % n, Slice.send(0, 0))
                    .recv(Math.floorMod(r - k, n), Slice.recv(0, 0));
        }
        return b.build();
    }

    /** ceil(lg n) rounds of empty messages. */
    @Override
    public Prediction predict(Problem p) {
        Network net = new Network(p.topology());
        int g = net.outer();
        int rounds = Costs.ceilLg(p.size());
        return new Prediction(rounds * net.alpha(g), "ceil(lg n)*alpha = " + rounds + "*" + Costs.secs(net.alpha(g)),
                0);
    }
}
