package dev.panamax.ml;

import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * {@link GradientCompression#powerSgd}: each bucket all-reduced as a rank-r approximation (Vogels, Karimireddy and
 * Jaggi, "PowerSGD: Practical Low-Rank Gradient Compression for Distributed Optimization", 2019), with error
 * feedback and warm start, as PyTorch's {@code batched_powerSGD_hook} does it: the bucket, plus what compression
 * left out of it at the previous step, is seen as a square matrix M (side {@code ceil(sqrt(count))}, padded with
 * zeros); one step of power iteration finds P = M Q (all-reduced, then orthonormalized) and Q = M^T P
 * (all-reduced), and P Q^T is the average. Both all-reduces carry {@code 2 * side * r} elements instead of
 * {@code count}.
 *
 * <p>Every all-reduced quantity is a sum over ranks, so every rank computes the same P and Q, and the same result.
 * Arithmetic is in float64; P and Q travel in the bucket's type.
 */
final class PowerSgdCompression implements GradientCompression {
    /** Buckets that compression would not shrink at least this much are all-reduced as they are. */
    private static final int MIN_COMPRESSION_RATE = 2;
    private static final long SEED = 0x5EED_9D5L;

    private final int rank;
    private final int uncompressedSteps;
    private final Map<BucketKey, State> states = new HashMap<>();
    private final WireBuffer wire = new WireBuffer();
    /** The bucket plus its error, as float64: scratch shared by the buckets (one at a time). */
    private double[] matrix = new double[0];

    PowerSgdCompression(int rank, int uncompressedSteps) {
        if (rank < 1) {
            throw new IllegalArgumentException("PowerSGD's rank must be >= 1: " + rank);
        }
        if (uncompressedSteps < 0) {
            throw new IllegalArgumentException("uncompressedSteps must be >= 0: " + uncompressedSteps);
        }
        this.rank = rank;
        this.uncompressedSteps = uncompressedSteps;
    }

    /** A bucket, known by where it lies: the synchronizer passes the same buffers at every step. */
    private record BucketKey(long address, long count) {
    }

    /** What one bucket keeps from step to step. */
    private static final class State {
        final int side;
        final int r;
        final boolean compressed;
        /** What compression left out of this rank's bucket at the previous step: added to the next. */
        final double[] error;
        final double[] p;
        /** Q of the previous step (warm start): random at first, the same on every rank. */
        final double[] q;
        long steps;

        State(long count, int rank, long seed) {
            side = (int) Math.ceil(Math.sqrt((double) count));
            r = Math.min(rank, side);
            compressed = (long) MIN_COMPRESSION_RATE * 2 * side * r <= count;
            error = compressed ? new double[(int) count] : null;
            p = compressed ? new double[side * r] : null;
            q = compressed ? new double[side * r] : null;
            if (compressed) {
                SplittableRandom random = new SplittableRandom(seed);
                for (int i = 0; i < q.length; i++) {
                    q[i] = random.nextGaussian();
                }
            }
        }
    }

    @Override
    public void requireSupported(DataType type) {
        FloatBuckets.requireFloat("PowerSGD", type);
    }

    @Override
    public void allReduce(Communicator comm, MemorySegment bucket, long count, DataType type, ReduceOp op) {
        FloatBuckets.requireFloatSumOrAverage("PowerSGD", type, op);
        if (count == 0) {
            return;
        }
        if (count > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("PowerSGD compression takes buckets of up to 2^31 - 9 elements, not "
                    + count);
        }
        State s = states.computeIfAbsent(new BucketKey(bucket.address(), count),
                k -> new State(count, rank, SEED + states.size()));
        s.steps++;
        if (!s.compressed || s.steps <= uncompressedSteps) {
            comm.allReduce(bucket, count, type, op);
            return;
        }
        int n = (int) count;
        if (matrix.length < n) {
            matrix = new double[n];
        }
        double[] m = matrix;
        boolean wide = type == DataType.FLOAT64;
        for (int i = 0; i < n; i++) {
            m[i] = (wide ? bucket.getAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, i)
                    : bucket.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i)) + s.error[i];
        }
        int side = s.side;
        int r = s.r;
        double[] p = s.p;
        double[] q = s.q;
        // P = M Q
        Arrays.fill(p, 0);
        for (int i = 0, idx = 0; i < side && idx < n; i++) {
            for (int j = 0; j < side && idx < n; j++, idx++) {
                double v = m[idx];
                for (int k = 0; k < r; k++) {
                    p[i * r + k] += v * q[j * r + k];
                }
            }
        }
        sum(comm, p, type);
        orthonormalizeColumns(p, side, r);
        // Q = M^T P
        Arrays.fill(q, 0);
        for (int i = 0, idx = 0; i < side && idx < n; i++) {
            for (int j = 0; j < side && idx < n; j++, idx++) {
                double v = m[idx];
                for (int k = 0; k < r; k++) {
                    q[j * r + k] += v * p[i * r + k];
                }
            }
        }
        sum(comm, q, type);
        int ranks = comm.size();
        for (int i = 0; i < q.length; i++) {
            q[i] /= ranks;
        }
        // The average is P Q^T; what it leaves out of this rank's matrix is the error for the next step.
        double scale = op == ReduceOp.AVG ? 1 : ranks;
        for (int i = 0, idx = 0; i < side && idx < n; i++) {
            for (int j = 0; j < side && idx < n; j++, idx++) {
                double average = 0;
                for (int k = 0; k < r; k++) {
                    average += p[i * r + k] * q[j * r + k];
                }
                s.error[idx] = m[idx] - average;
                if (wide) {
                    bucket.setAtIndex(ValueLayout.JAVA_DOUBLE_UNALIGNED, idx, average * scale);
                } else {
                    bucket.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, idx, (float) (average * scale));
                }
            }
        }
    }

    /** All-reduces {@code values} (sum) in {@code type}: every rank ends with the same values. */
    private void sum(Communicator comm, double[] values, DataType type) {
        boolean wide = type == DataType.FLOAT64;
        MemorySegment w = wire.get(comm, values.length * type.byteSize());
        for (int i = 0; i < values.length; i++) {
            if (wide) {
                w.setAtIndex(ValueLayout.JAVA_DOUBLE, i, values[i]);
            } else {
                w.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) values[i]);
            }
        }
        comm.allReduce(w, values.length, type, ReduceOp.SUM);
        for (int i = 0; i < values.length; i++) {
            values[i] = wide ? w.getAtIndex(ValueLayout.JAVA_DOUBLE, i) : w.getAtIndex(ValueLayout.JAVA_FLOAT, i);
        }
    }

    /**
     * Gram-Schmidt on the {@code cols} columns of the row-major {@code rows x cols} matrix {@code a}, each column
     * projected out twice (once leaves rounding errors that normalizing a small remainder would blow up); a column
     * that less than 1e-10 of is left (it lay in the span of those before) becomes zero.
     */
    static void orthonormalizeColumns(double[] a, int rows, int cols) {
        for (int k = 0; k < cols; k++) {
            double before = Math.sqrt(columnDot(a, rows, cols, k, k));
            for (int pass = 0; pass < 2; pass++) {
                for (int prev = 0; prev < k; prev++) {
                    double dot = columnDot(a, rows, cols, k, prev);
                    for (int i = 0; i < rows; i++) {
                        a[i * cols + k] -= dot * a[i * cols + prev];
                    }
                }
            }
            double norm = Math.sqrt(columnDot(a, rows, cols, k, k));
            double inverse = norm > 1e-10 * before && norm > 0 ? 1 / norm : 0;
            for (int i = 0; i < rows; i++) {
                a[i * cols + k] *= inverse;
            }
        }
    }

    private static double columnDot(double[] a, int rows, int cols, int k, int l) {
        double dot = 0;
        for (int i = 0; i < rows; i++) {
            dot += a[i * cols + k] * a[i * cols + l];
        }
        return dot;
    }

    @Override
    public void close() {
        wire.close();
        states.clear();
    }

    @Override
    public String toString() {
        return "powersgd:" + rank;
    }
}
