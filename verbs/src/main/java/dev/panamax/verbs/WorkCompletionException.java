package dev.panamax.verbs;

/**
 * A work completion whose status is not success. The message names the status as
 * {@code ibv_wc_status_str} does (for example {@code remote access error} for a wrong rkey), the work
 * request id and queue pair. {@link #code()} is the status ({@code enum ibv_wc_status}).
 */
public final class WorkCompletionException extends VerbsException {
    private static final long serialVersionUID = 1L;

    private final long wrId;
    private final int qpNumber;
    private final String statusString;

    // The opcode of a failed completion is undefined (ibv_poll_cq(3)), so it is not reported.
    WorkCompletionException(int status, String statusString, long wrId, int qpNumber, int vendorError) {
        super("ibv_poll_cq", status, "work completion failed: " + statusString + " (status " + status + "); wr_id "
                + wrId + ", queue pair " + qpNumber + ", vendor error 0x" + Integer.toHexString(vendorError));
        this.wrId = wrId;
        this.qpNumber = qpNumber;
        this.statusString = statusString;
    }

    /** The status ({@code enum ibv_wc_status}). */
    public int status() {
        return code();
    }

    /** {@code ibv_wc_status_str(status)}. */
    public String statusString() {
        return statusString;
    }

    /** The id of the failed work request. */
    public long wrId() {
        return wrId;
    }

    /** The local queue pair the work request was posted to. */
    public int qpNumber() {
        return qpNumber;
    }
}
