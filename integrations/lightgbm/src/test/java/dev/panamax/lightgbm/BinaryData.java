package dev.panamax.lightgbm;

import java.util.Arrays;
import java.util.Random;

/** A seeded binary classification data set: rows of features (row-major) and 0/1 labels. */
record BinaryData(double[] features, float[] labels, int rows, int cols) {

    /** {@code rows} rows of {@code cols} features; the label is a noisy threshold of a fixed linear score. */
    static BinaryData generate(long seed, int rows, int cols) {
        Random random = new Random(seed);
        double[] weights = new double[cols];
        for (int j = 0; j < cols; j++) {
            weights[j] = random.nextGaussian();
        }
        double[] features = new double[rows * cols];
        float[] labels = new float[rows];
        for (int i = 0; i < rows; i++) {
            double score = 0;
            for (int j = 0; j < cols; j++) {
                double x = j % 3 == 0 ? random.nextInt(5) : random.nextGaussian();
                features[i * cols + j] = x;
                score += weights[j] * x;
            }
            labels[i] = score + 0.5 * random.nextGaussian() > 0 ? 1f : 0f;
        }
        return new BinaryData(features, labels, rows, cols);
    }

    /** Rows {@code [from, to)}. */
    BinaryData rows(int from, int to) {
        return new BinaryData(Arrays.copyOfRange(features, from * cols, to * cols),
                Arrays.copyOfRange(labels, from, to), to - from, cols);
    }

    /** Part {@code part} of {@code parts} contiguous, nearly equal parts. */
    BinaryData part(int part, int parts) {
        return rows((int) ((long) rows * part / parts), (int) ((long) rows * (part + 1) / parts));
    }

    /** The fraction of rows whose label {@code probabilities} (class 1) predict at the 0.5 threshold. */
    double accuracy(double[] probabilities) {
        int right = 0;
        for (int i = 0; i < rows; i++) {
            if ((probabilities[i] > 0.5) == (labels[i] > 0.5f)) {
                right++;
            }
        }
        return (double) right / rows;
    }
}
