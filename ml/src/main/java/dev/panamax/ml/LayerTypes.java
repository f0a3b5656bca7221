package dev.panamax.ml;

import java.util.Arrays;

/**
 * The layer-type decision of [ASC-WFBP] (Algorithm 1, DetermineLayerType), a pure function.
 *
 * <p>As in Algorithm 1, every tensor starts {@link LayerType#NORMAL}; the tensors are visited in
 * backward order, each given a type while the ones before it keep theirs, and the timeline is
 * recomputed after each choice. Theorem 1's criterion, the type under which the schedule
 * finishes first, is evaluated directly with the {@link WfbpSimulator} instead of through the
 * closed-form conditions Q1-Q4, which the paper derived for its partially overlapping
 * simultaneous all-reduces (see the simulator): a candidate type for tensor i is worth the
 * shortest modelled iteration with it and any type for tensor i + 1 (later tensors normal). The
 * look-ahead matters because "i normal, i + 1 simultaneous with it" competes with "i merged into
 * i + 1", and only i's step can choose between them. Ties keep the simpler type: normal, then
 * merged, then simultaneous. So a tensor whose all-reduce hides behind the next tensor's
 * computation stays normal (the paper's Q1), and the result never models slower than WFBP
 * (each step's value is at most the previous step's, the first's at most all-normal).
 *
 * <p>{@link SyncPolicy#WFBP}: every tensor normal. {@link SyncPolicy#MG_WFBP}: normal or merged
 * (tensor fusion where it pays, MG-WFBP). {@link SyncPolicy#ASC_WFBP}: normal, merged or
 * simultaneous, at most two all-reduces at a time (the paper's two-way simultaneous
 * communications, whose gamma {@link AllReduceModel#calibrate} measures). A fused group never
 * exceeds {@link AllReduceModel#maxFusedBytes()}. O(L^2) for L tensors, like Algorithm 1.
 */
public final class LayerTypes {
    /** A change must shorten the modelled iteration by more than this fraction (rounding, not gain). */
    private static final double EPSILON = 1e-12;

    private LayerTypes() {
    }

    /** One type per tensor of {@code profile}, in backward order; the last tensor is never MERGED, the first never
     * SIMULTANEOUS. */
    public static LayerType[] decide(BackwardProfile profile, AllReduceModel model, SyncPolicy policy) {
        int n = profile.tensors();
        LayerType[] types = new LayerType[n];
        Arrays.fill(types, LayerType.NORMAL);
        if (policy == SyncPolicy.WFBP) {
            return types;
        }
        double best = Double.POSITIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            LayerType chosen = null;
            for (LayerType candidate : LayerType.values()) {
                if (allowed(candidate, i, types, policy, profile, model)) {
                    types[i] = candidate;
                    double t = withNext(profile, model, policy, types, i + 1);
                    if (chosen == null || t < best * (1 - EPSILON)) {
                        best = t;
                        chosen = candidate;
                    }
                }
            }
            types[i] = chosen;
        }
        return types;
    }

    /** The shortest modelled iteration over the types tensor {@code next} may take (later tensors normal); restores it
     * to normal. */
    private static double withNext(BackwardProfile profile, AllReduceModel model, SyncPolicy policy, LayerType[] types,
            int next) {
        if (next == types.length) {
            return WfbpSimulator.simulate(profile, model, types).iterationSeconds();
        }
        double best = Double.POSITIVE_INFINITY;
        for (LayerType candidate : LayerType.values()) {
            if (allowed(candidate, next, types, policy, profile, model)) {
                types[next] = candidate;
                best = Math.min(best, WfbpSimulator.simulate(profile, model, types).iterationSeconds());
            }
        }
        types[next] = LayerType.NORMAL;
        return best;
    }

    private static boolean allowed(LayerType type, int i, LayerType[] types, SyncPolicy policy, BackwardProfile profile,
                                   AllReduceModel model) {
        return switch (type) {
            case NORMAL -> true;
            case MERGED -> i < types.length - 1 && fusedBytes(i, types, profile) <= model.maxFusedBytes();
            case SIMULTANEOUS -> policy == SyncPolicy.ASC_WFBP && pairsWithSingle(i, types);
        };
    }

    /** Bytes of tensor i's group if i is merged into i + 1: the merged tensors before i, i and i + 1. */
    private static long fusedBytes(int i, LayerType[] types, BackwardProfile profile) {
        long[] bytes = profile.bytes();
        long sum = bytes[i] + bytes[i + 1];
        for (int j = i - 1; j >= 0 && types[j] == LayerType.MERGED; j--) {
            sum += bytes[j];
        }
        return sum;
    }

    /**
     * Whether tensor i's group may run at the same time as the group before it: there is one, and
     * it is not itself simultaneous with another (two-way only, as in the paper, whose gamma is
     * that of two all-reduces).
     */
    private static boolean pairsWithSingle(int i, LayerType[] types) {
        int j = i - 1;
        while (j >= 0 && types[j] == LayerType.MERGED) {
            j--;
        }
        return j >= 0 && types[j] != LayerType.SIMULTANEOUS;
    }
}
