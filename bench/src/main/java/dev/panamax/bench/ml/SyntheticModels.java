package dev.panamax.bench.ml;

import dev.panamax.ml.BackwardProfile;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Synthetic profiles of the four models of [ASC-WFBP] (Table III), for the simulator, the tests
 * and {@code scripts/bench/wfbp-bench}. SYNTHETIC: no model was run to make them.
 * <ul>
 * <li>Tensor count and sizes follow each architecture's layer configuration (torchvision's
 *     ResNet-152 and DenseNet-201, the common Inception-v4 with batch-normalized convolutions,
 *     BERT-Base with its pre-training heads): 467, 604, 449 and 206 float32 gradient tensors of
 *     about 60 M, 20 M, 43 M and 110 M parameters.</li>
 * <li>Backward times are invented: the paper's total (ResNet-152: forward 0.091 s, backward
 *     0.182 s on an RTX 2080 Ti; the others chosen so that the paper's maximal speedups of
 *     Table V come out: DenseNet-201 0.07 / 0.14 s, Inception-v4 0.062 / 0.124 s, BERT-Base
 *     0.10 / 0.20 s) spread over the layers in proportion to an estimate of their work:
 *     multiply-adds for convolutions and linear layers, 40 per activation element for
 *     normalization layers (memory bound), a little per token for embeddings. A layer's weight
 *     becomes ready after its work, its bias (and a normalization layer's second tensor) at the
 *     same moment.</li>
 * </ul>
 * Tensors are listed in backward order: the last layer's first.
 */
public final class SyntheticModels {
    private SyntheticModels() {
    }

    /** The four models by name: resnet152, densenet201, inception4, bert-base. */
    public static Map<String, Supplier<BackwardProfile>> all() {
        LinkedHashMap<String, Supplier<BackwardProfile>> m = new LinkedHashMap<>();
        m.put("resnet152", SyntheticModels::resnet152);
        m.put("densenet201", SyntheticModels::densenet201);
        m.put("inception4", SyntheticModels::inceptionV4);
        m.put("bert-base", SyntheticModels::bertBase);
        return m;
    }

    /**
     * Two probes, not models: profiles where the cost model predicts wide gaps between the
     * policies, so that a measurement can confirm or contradict its ordering on a machine whose
     * run-to-run noise hides the paper models' smaller gaps.
     * <ul>
     * <li>{@code comm-bound}: 32 tensors of 16 MiB, all ready within 20 ms of backward:
     *     communication dominates; one fused all-reduce beats 32 (a), and two all-reduces run
     *     together beat one of twice the bytes wherever gamma is below 2 (eq. 9).</li>
     * <li>{@code many-small}: 512 tensors of 16 KiB, ready over 20 ms: start-up bound; fusing
     *     saves hundreds of a.</li>
     * </ul>
     */
    public static Map<String, Supplier<BackwardProfile>> probes() {
        LinkedHashMap<String, Supplier<BackwardProfile>> m = new LinkedHashMap<>();
        m.put("comm-bound", () -> uniform(32, 16L << 20, 0.01, 0.02));
        m.put("many-small", () -> uniform(512, 16L << 10, 0.01, 0.02));
        return m;
    }

    /** {@code tensors} tensors of {@code bytes} each, the backward time spread evenly. */
    static BackwardProfile uniform(int tensors, long bytes, double forwardSeconds, double backwardSeconds) {
        double[] t = new double[tensors];
        long[] b = new long[tensors];
        Arrays.fill(t, backwardSeconds / tensors);
        Arrays.fill(b, bytes);
        return new BackwardProfile(forwardSeconds, t, b);
    }

    /** Layers in forward order; each has its tensors (parameter counts) and work (any unit). */
    private static final class Net {
        private final List<long[]> tensors = new ArrayList<>();
        private final List<Double> work = new ArrayList<>();

        void layer(double work, long... params) {
            tensors.add(params);
            this.work.add(work);
        }

        /** Convolution k1 x k2, cin -> cout, at an output of hw x hw, no bias; then batch norm. */
        void convBn(int k1, int k2, int cin, int cout, int hw) {
            long p = (long) k1 * k2 * cin * cout;
            layer((double) p * hw * hw, p);
            norm(cout, (long) cout * hw * hw);
        }

        void norm(long channels, long activations) {
            layer(40.0 * activations, channels, channels);
        }

        BackwardProfile profile(double forwardSeconds, double backwardSeconds) {
            double total = 0;
            for (double w : work) {
                total += w;
            }
            List<Double> times = new ArrayList<>();
            List<Long> bytes = new ArrayList<>();
            for (int l = tensors.size() - 1; l >= 0; l--) {
                long[] ps = tensors.get(l);
                for (int k = 0; k < ps.length; k++) {
                    times.add(k == 0 ? backwardSeconds * work.get(l) / total : 0.0);
                    bytes.add(4 * ps[k]);
                }
            }
            return new BackwardProfile(forwardSeconds, times.stream().mapToDouble(Double::doubleValue).toArray(),
                    bytes.stream().mapToLong(Long::longValue).toArray());
        }
    }

    /** ResNet-152: stem, bottleneck stages of 3, 8, 36, 3 blocks, fully connected layer. */
    public static BackwardProfile resnet152() {
        Net n = new Net();
        n.convBn(7, 7, 3, 64, 112);
        int[] blocks = {3, 8, 36, 3};
        int[] widths = {64, 128, 256, 512};
        int[] sizes = {56, 28, 14, 7};
        int in = 64;
        for (int s = 0; s < 4; s++) {
            int w = widths[s];
            int hw = sizes[s];
            for (int b = 0; b < blocks[s]; b++) {
                n.convBn(1, 1, in, w, hw);
                n.convBn(3, 3, w, w, hw);
                n.convBn(1, 1, w, 4 * w, hw);
                if (b == 0) {
                    n.convBn(1, 1, in, 4 * w, hw);
                }
                in = 4 * w;
            }
        }
        n.layer(2048.0 * 1000, 2048L * 1000, 1000);
        return n.profile(0.091, 0.182);
    }

    /** DenseNet-201: growth 32, blocks of 6, 12, 48, 32 layers, transitions halving the channels. */
    public static BackwardProfile densenet201() {
        Net n = new Net();
        n.layer(7.0 * 7 * 3 * 64 * 112 * 112, 7L * 7 * 3 * 64);
        n.norm(64, 64L * 112 * 112);
        int[] blocks = {6, 12, 48, 32};
        int[] sizes = {56, 28, 14, 7};
        int c = 64;
        for (int s = 0; s < 4; s++) {
            int hw = sizes[s];
            for (int l = 0; l < blocks[s]; l++) {
                n.norm(c, (long) c * hw * hw);
                n.layer((double) c * 128 * hw * hw, (long) c * 128);
                n.norm(128, 128L * hw * hw);
                n.layer(9.0 * 128 * 32 * hw * hw, 9L * 128 * 32);
                c += 32;
            }
            if (s < 3) {
                n.norm(c, (long) c * hw * hw);
                n.layer((double) c * (c / 2) * hw * hw, (long) c * (c / 2));
                c /= 2;
            }
        }
        n.norm(c, (long) c * 49);
        n.layer((double) c * 1000, (long) c * 1000, 1000);
        return n.profile(0.07, 0.14);
    }

    /** Inception-v4: stem, 4 Inception-A, Reduction-A, 7 Inception-B, Reduction-B, 3 Inception-C; 149 convolutions. */
    public static BackwardProfile inceptionV4() {
        Net n = new Net();
        n.convBn(3, 3, 3, 32, 149);
        n.convBn(3, 3, 32, 32, 147);
        n.convBn(3, 3, 32, 64, 147);
        n.convBn(3, 3, 64, 96, 73);
        n.convBn(1, 1, 160, 64, 73);
        n.convBn(3, 3, 64, 96, 71);
        n.convBn(1, 1, 160, 64, 73);
        n.convBn(1, 7, 64, 64, 73);
        n.convBn(7, 1, 64, 64, 73);
        n.convBn(3, 3, 64, 96, 71);
        n.convBn(3, 3, 192, 192, 35);
        for (int i = 0; i < 4; i++) {
            n.convBn(1, 1, 384, 96, 35);
            n.convBn(1, 1, 384, 64, 35);
            n.convBn(3, 3, 64, 96, 35);
            n.convBn(1, 1, 384, 64, 35);
            n.convBn(3, 3, 64, 96, 35);
            n.convBn(3, 3, 96, 96, 35);
            n.convBn(1, 1, 384, 96, 35);
        }
        n.convBn(3, 3, 384, 384, 17);
        n.convBn(1, 1, 384, 192, 35);
        n.convBn(3, 3, 192, 224, 35);
        n.convBn(3, 3, 224, 256, 17);
        for (int i = 0; i < 7; i++) {
            n.convBn(1, 1, 1024, 384, 17);
            n.convBn(1, 1, 1024, 192, 17);
            n.convBn(1, 7, 192, 224, 17);
            n.convBn(7, 1, 224, 256, 17);
            n.convBn(1, 1, 1024, 192, 17);
            n.convBn(7, 1, 192, 192, 17);
            n.convBn(1, 7, 192, 224, 17);
            n.convBn(7, 1, 224, 224, 17);
            n.convBn(1, 7, 224, 256, 17);
            n.convBn(1, 1, 1024, 128, 17);
        }
        n.convBn(1, 1, 1024, 192, 17);
        n.convBn(3, 3, 192, 192, 8);
        n.convBn(1, 1, 1024, 256, 17);
        n.convBn(1, 7, 256, 256, 17);
        n.convBn(7, 1, 256, 320, 17);
        n.convBn(3, 3, 320, 320, 8);
        for (int i = 0; i < 3; i++) {
            n.convBn(1, 1, 1536, 256, 8);
            n.convBn(1, 1, 1536, 384, 8);
            n.convBn(1, 3, 384, 256, 8);
            n.convBn(3, 1, 384, 256, 8);
            n.convBn(1, 1, 1536, 384, 8);
            n.convBn(3, 1, 384, 448, 8);
            n.convBn(1, 3, 448, 512, 8);
            n.convBn(1, 3, 512, 256, 8);
            n.convBn(3, 1, 512, 256, 8);
            n.convBn(1, 1, 1536, 256, 8);
        }
        n.layer(1536.0 * 1000, 1536L * 1000, 1000);
        return n.profile(0.062, 0.124);
    }

    /** BERT-Base (12 layers, hidden 768, intermediate 3072, vocabulary 30522) with the pre-training heads; batch 64 x
     * 64 tokens. */
    public static BackwardProfile bertBase() {
        Net n = new Net();
        long h = 768;
        long tokens = 64 * 64;
        long vocab = 30522;
        // Embeddings: the word embedding's gradient also collects the tied decoder's, so it is ready last.
        n.layer(10.0 * tokens * h, vocab * h);
        n.layer(tokens * h, 512 * h);
        n.layer(tokens * h, 2 * h);
        n.norm(h, tokens * h);
        for (int l = 0; l < 12; l++) {
            for (int k = 0; k < 3; k++) {
                n.layer((double) tokens * h * h, h * h, h);
            }
            // The attention scores and their weighted sum (no parameters) are charged to the output projection.
            n.layer((double) tokens * h * h + 2.0 * tokens * 64 * h, h * h, h);
            n.norm(h, tokens * h);
            n.layer((double) tokens * h * 4 * h, h * 4 * h, 4 * h);
            n.layer((double) tokens * 4 * h * h, 4 * h * h, h);
            n.norm(h, tokens * h);
        }
        n.layer((double) 64 * h * h, h * h, h);
        n.layer((double) tokens * h * h, h * h, h);
        n.norm(h, tokens * h);
        // The decoder (tied to the word embedding) multiplies by the whole vocabulary: charged to its bias.
        n.layer((double) tokens * h * vocab, vocab);
        n.layer(64.0 * h * 2, h * 2, 2);
        return n.profile(0.10, 0.20);
    }
}
