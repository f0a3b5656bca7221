package dev.panamax.collectives.schedule;

import java.util.Objects;

/**
 * One action of a rank in a {@link Stage}: a transfer to or from a peer, or a local copy, reduction
 * or final scaling. Peers are ranks of the communicator the schedule runs on.
 */
public sealed interface Step {

    /** True for {@link Send} and {@link Recv}, which wait on a peer. */
    default boolean isTransfer() {
        return this instanceof Send || this instanceof Recv;
    }

    /** Sends {@code src} to {@code peer}. */
    record Send(int peer, Slice src) implements Step {
        public Send {
            Objects.requireNonNull(src, "src");
        }

        @Override
        public String toString() {
            return "send " + src + " -> " + peer;
        }
    }

    /**
     * Receives {@code dst.count()} elements from {@code peer}: copied into {@code dst} when
     * {@code with} is null, otherwise {@code dst = with op incoming} element-wise.
     */
    record Recv(int peer, Slice dst, Slice with) implements Step {
        public Recv {
            Objects.requireNonNull(dst, "dst");
            if (with != null && with.count() != dst.count()) {
                throw new IllegalArgumentException("recv-reduce operand " + with + " and destination " + dst
                        + " differ in length");
            }
        }

        @Override
        public String toString() {
            return with == null ? "recv " + dst + " <- " + peer : "recv " + dst + " = " + with + " op (" + peer + ")";
        }
    }

    /** Copies {@code src} to {@code dst}. */
    record Copy(Slice src, Slice dst) implements Step {
        public Copy {
            if (src.count() != dst.count()) {
                throw new IllegalArgumentException("copy " + src + " -> " + dst + ": lengths differ");
            }
        }

        @Override
        public String toString() {
            return "copy " + dst + " = " + src;
        }
    }

    /** {@code dst = a op b} element-wise ({@code dst} may be {@code a}: accumulate). */
    record Reduce(Slice dst, Slice a, Slice b) implements Step {
        public Reduce {
            if (a.count() != dst.count() || b.count() != dst.count()) {
                throw new IllegalArgumentException("reduce " + dst + " = " + a + " op " + b + ": lengths differ");
            }
        }

        @Override
        public String toString() {
            return "reduce " + dst + " = " + a + " op " + b;
        }
    }

    /**
     * Ends a reduction of {@code contributions} inputs on {@code slice}: divides by
     * {@code contributions} for {@code AVG}, nothing for the other operations. (The communicators run the
     * {@code AVG} of float32, float64 and float16 as a sum of inputs scaled by 1/size, so only bfloat16 and the
     * integers reach the division.)
     */
    record Finish(Slice slice, int contributions) implements Step {
        @Override
        public String toString() {
            return "finish " + slice + " (avg: / " + contributions + ")";
        }
    }
}
