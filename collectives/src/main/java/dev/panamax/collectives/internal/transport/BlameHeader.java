package dev.panamax.collectives.internal.transport;

/**
 * The 8-byte header by which a stream transport passes on blame: where a length is expected, a
 * header of {@code -(BASE + r)} says the sender gave up because rank r failed, so the receiver's
 * error names r rather than the sender (TCP links send it on their stream, verbs links on their
 * otherwise idle TCP connection).
 */
public final class BlameHeader {
    /** Headers at or below {@code -BASE} carry a blame; lengths are non-negative. */
    private static final long BASE = 2;

    private BlameHeader() {
    }

    /** The header that says: this side gave up because rank {@code failed} failed. */
    public static long encode(int failed) {
        return -(BASE + failed);
    }

    /** The rank a header blames, or -1 when it is a length. */
    public static int blamedRank(long header) {
        return header <= -BASE ? (int) (-header - BASE) : -1;
    }
}
