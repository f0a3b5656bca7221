package dev.panamax.verbs;

/**
 * The sizes of a queue pair ({@code struct ibv_qp_cap}): outstanding send and receive work requests,
 * scatter/gather entries per request, and the largest message that may be sent inline.
 */
public record QpCapabilities(int maxSendWr, int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInlineData) {
    public QpCapabilities {
        if (maxSendWr < 1 || maxRecvWr < 1) {
            throw new IllegalArgumentException("maxSendWr and maxRecvWr must be >= 1: " + maxSendWr + ", " + maxRecvWr);
        }
        if (maxSendSge < 1 || maxRecvSge < 1) {
            throw new IllegalArgumentException(
                    "maxSendSge and maxRecvSge must be >= 1: " + maxSendSge + ", " + maxRecvSge);
        }
        if (maxInlineData < 0) {
            throw new IllegalArgumentException("maxInlineData must be >= 0: " + maxInlineData);
        }
    }

    /** {@code maxSendWr} and {@code maxRecvWr} requests of one scatter/gather entry each, nothing inline. */
    public static QpCapabilities of(int maxSendWr, int maxRecvWr) {
        return new QpCapabilities(maxSendWr, maxRecvWr, 1, 1, 0);
    }
}
