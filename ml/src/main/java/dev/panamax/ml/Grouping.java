package dev.panamax.ml;

import java.util.ArrayList;
import java.util.List;

/**
 * What a typing means for execution, shared by the simulator and the synchronizer so that both
 * run the same plan. A group is a maximal run of {@link LayerType#MERGED} tensors with the
 * tensor that ends it: one all-reduce. A batch is a group followed by the
 * {@link LayerType#SIMULTANEOUS} groups after it: all-reduces started together, once the last of
 * them is ready and the previous batch is done.
 */
final class Grouping {
    /** Tensor indices of each group, in backward order. */
    final int[][] groups;
    /** Group indices of each batch, in order. */
    final int[][] batches;

    private Grouping(int[][] groups, int[][] batches) {
        this.groups = groups;
        this.batches = batches;
    }

    /** @throws IllegalArgumentException when the last tensor is {@link LayerType#MERGED} (there is nothing to merge it
     * into) */
    static Grouping of(LayerType[] types) {
        int n = types.length;
        if (n > 0 && types[n - 1] == LayerType.MERGED) {
            throw new IllegalArgumentException("the last tensor (" + (n - 1)
                    + ") cannot be MERGED: no tensor follows it");
        }
        List<int[]> groups = new ArrayList<>();
        List<int[]> batches = new ArrayList<>();
        List<Integer> batch = new ArrayList<>();
        int start = 0;
        for (int i = 0; i < n; i++) {
            if (types[i] == LayerType.MERGED) {
                continue;
            }
            if (types[i] != LayerType.SIMULTANEOUS && !batch.isEmpty()) {
                batches.add(batch.stream().mapToInt(Integer::intValue).toArray());
                batch.clear();
            }
            int[] g = new int[i + 1 - start];
            for (int k = 0; k < g.length; k++) {
                g[k] = start + k;
            }
            batch.add(groups.size());
            groups.add(g);
            start = i + 1;
        }
        if (!batch.isEmpty()) {
            batches.add(batch.stream().mapToInt(Integer::intValue).toArray());
        }
        return new Grouping(groups.toArray(int[][]::new), batches.toArray(int[][]::new));
    }
}
