package dev.panamax.ml;

import java.util.Objects;

/**
 * The timeline of one training iteration under a typing, from the {@link AllReduceModel} and a
 * {@link BackwardProfile}; a pure function. It follows [ASC-WFBP]'s timeline equations for the
 * way this library executes the typing ({@link GradientSynchronizer} runs exactly this plan):
 * <ul>
 * <li>tensor i is ready at {@code tau_b(i) + t_b(i)}, the running sum of the backward times;</li>
 * <li>a group (merged tensors and the one that ends it, see {@link LayerType}) is one all-reduce
 *     of the sum of their sizes, eq. 3, ready when its last tensor is (eq. 16);</li>
 * <li>a batch (a group and the {@link LayerType#SIMULTANEOUS} groups right after it) starts when
 *     the previous batch is done and all its groups are ready (eq. 15), and takes
 *     {@link AllReduceModel#simultaneousSeconds} (eq. 9 and 11; one group: eq. 3);</li>
 * <li>the fusion copies, on the thread that runs the batches, as {@link GradientSynchronizer}
 *     does them: each tensor of a fused group is copied in ({@link AllReduceModel#copySeconds})
 *     once it is ready and the thread is free, the batch starts after the last copy in, and
 *     its fused groups are copied back out before the next batch;</li>
 * <li>the iteration takes the forward time plus the later of the end of back-propagation and the
 *     end of the last all-reduce.</li>
 * </ul>
 * Unlike the paper's simultaneous layer, which starts while the previous all-reduce is in flight
 * (eq. 12-13, partial overlap), a simultaneous group here starts together with the previous one:
 * a collective cannot take a new all-reduce into one under way with all ranks agreeing where.
 */
public final class WfbpSimulator {
    private WfbpSimulator() {
    }

    /**
     * One iteration's timeline; times in seconds from the start of back-propagation except
     * {@code iterationSeconds}, which includes the forward time.
     *
     * @param commStartSeconds per tensor, when its all-reduce starts
     * @param commEndSeconds   per tensor, when its all-reduce ends
     */
    public record Timeline(double iterationSeconds, double backwardSeconds, double lastCommEndSeconds,
                           double[] commStartSeconds, double[] commEndSeconds) {
        /** Communication time not hidden behind back-propagation. */
        public double exposedCommSeconds() {
            return Math.max(0, lastCommEndSeconds - backwardSeconds);
        }
    }

    /** The timeline of {@code profile} under {@code policy}'s typing ({@link LayerTypes#decide}). */
    public static Timeline simulate(BackwardProfile profile, AllReduceModel model, SyncPolicy policy) {
        return simulate(profile, model, LayerTypes.decide(profile, model, policy));
    }

    /** The timeline of {@code profile} under {@code types} (one per tensor, the last not MERGED). */
    public static Timeline simulate(BackwardProfile profile, AllReduceModel model, LayerType[] types) {
        Objects.requireNonNull(model, "model");
        if (types.length != profile.tensors()) {
            throw new IllegalArgumentException(types.length + " layer types for " + profile.tensors() + " tensors");
        }
        Grouping plan = Grouping.of(types);
        double[] ready = profile.readySeconds();
        long[] bytes = profile.bytes();
        int n = bytes.length;
        double[] start = new double[n];
        double[] end = new double[n];
        double linkFree = 0;
        for (int[] batch : plan.batches) {
            // The thread waits for each tensor in turn, copying a fused group's in as they come.
            double s = linkFree;
            double copyOut = 0;
            double[] groupBytes = new double[batch.length];
            for (int k = 0; k < batch.length; k++) {
                int[] g = plan.groups[batch[k]];
                for (int t : g) {
                    groupBytes[k] += bytes[t];
                    s = Math.max(s, ready[t]) + (g.length > 1 ? model.copySeconds(bytes[t]) : 0);
                }
                copyOut += g.length > 1 ? model.copySeconds(groupBytes[k]) : 0;
            }
            double e = s + (batch.length == 1 ? model.seconds(groupBytes[0]) : model.simultaneousSeconds(groupBytes));
            for (int gi : batch) {
                for (int t : plan.groups[gi]) {
                    start[t] = s;
                    end[t] = e;
                }
            }
            linkFree = e + copyOut;
        }
        double backward = n == 0 ? 0 : ready[n - 1];
        return new Timeline(profile.forwardSeconds() + Math.max(backward, linkFree), backward, linkFree, start, end);
    }
}
