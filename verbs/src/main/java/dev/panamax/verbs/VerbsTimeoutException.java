package dev.panamax.verbs;

import dev.panamax.bindings.Errno;

/** No completion arrived on a completion queue within the timeout; the message names the queue. */
public final class VerbsTimeoutException extends VerbsException {
    private static final long serialVersionUID = 1L;

    private final long timeoutNanos;

    VerbsTimeoutException(String queue, long timeoutNanos) {
        super("ibv_poll_cq", Errno.ETIMEDOUT, "ibv_poll_cq: no completion on " + queue + " within "
                + formatNanos(timeoutNanos));
        this.timeoutNanos = timeoutNanos;
    }

    /** The timeout that passed. */
    public long timeoutNanos() {
        return timeoutNanos;
    }

    private static String formatNanos(long nanos) {
        if (nanos % 1_000_000 == 0) {
            return nanos / 1_000_000 + " ms";
        }
        return nanos / 1_000 + " us";
    }
}
