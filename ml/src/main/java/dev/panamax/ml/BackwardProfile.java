package dev.panamax.ml;

import java.util.Arrays;
import java.util.Objects;

/**
 * What the scheduling needs to know of a model: per gradient tensor, in backward order (tensor 0
 * becomes ready first), its size in bytes and its backward computation time, the time from the
 * previous tensor being ready (from the start of back-propagation for tensor 0) until it is ready;
 * and the forward time, which only adds to the iteration time.
 */
public record BackwardProfile(double forwardSeconds, double[] backwardSeconds, long[] bytes) {
    public BackwardProfile {
        Objects.requireNonNull(backwardSeconds, "backwardSeconds");
        Objects.requireNonNull(bytes, "bytes");
        if (backwardSeconds.length != bytes.length) {
            throw new IllegalArgumentException(backwardSeconds.length + " backward times but " + bytes.length
                    + " tensor sizes");
        }
        if (!(forwardSeconds >= 0) || Double.isInfinite(forwardSeconds)) {
            throw new IllegalArgumentException("forwardSeconds must be finite and >= 0: " + forwardSeconds);
        }
        for (int i = 0; i < bytes.length; i++) {
            if (!(backwardSeconds[i] >= 0) || Double.isInfinite(backwardSeconds[i])) {
                throw new IllegalArgumentException("backward time of tensor " + i + " must be finite and >= 0: "
                        + backwardSeconds[i]);
            }
            if (bytes[i] < 0) {
                throw new IllegalArgumentException("size of tensor " + i + " is negative: " + bytes[i]);
            }
        }
        backwardSeconds = backwardSeconds.clone();
        bytes = bytes.clone();
    }

    /** The number of gradient tensors. */
    public int tensors() {
        return bytes.length;
    }

    @Override
    public double[] backwardSeconds() {
        return backwardSeconds.clone();
    }

    @Override
    public long[] bytes() {
        return bytes.clone();
    }

    /** When each tensor is ready, in seconds from the start of back-propagation (a running sum of the backward times).
     * */
    public double[] readySeconds() {
        double[] ready = new double[bytes.length];
        double t = 0;
        for (int i = 0; i < ready.length; i++) {
            t += backwardSeconds[i];
            ready[i] = t;
        }
        return ready;
    }

    /** The whole backward time. */
    public double totalBackwardSeconds() {
        double t = 0;
        for (double s : backwardSeconds) {
            t += s;
        }
        return t;
    }

    /** The sum of the tensor sizes. */
    public long totalBytes() {
        long n = 0;
        for (long b : bytes) {
            n += b;
        }
        return n;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof BackwardProfile p && Double.compare(p.forwardSeconds, forwardSeconds) == 0
                && Arrays.equals(p.backwardSeconds, backwardSeconds) && Arrays.equals(p.bytes, bytes);
    }

    @Override
    public int hashCode() {
        return Double.hashCode(forwardSeconds) * 31 * 31 + Arrays.hashCode(backwardSeconds) * 31
                + Arrays.hashCode(bytes);
    }

    @Override
    public String toString() {
        return "BackwardProfile[" + bytes.length + " tensors, " + totalBytes() + " B, forward " + forwardSeconds
                + " s, backward "
                + totalBackwardSeconds() + " s]";
    }
}
