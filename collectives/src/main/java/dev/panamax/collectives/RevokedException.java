package dev.panamax.collectives;

/**
 * The communicator was revoked ({@link Communicator#revoke()}) by {@link #revoker()}: every pending
 * and later collective on it fails with this on every rank. {@link Communicator#agree} and
 * {@link Communicator#shrink} still work on a revoked communicator.
 */
public class RevokedException extends CollectiveException {
    private static final long serialVersionUID = 1L;
    private final int revoker;

    public RevokedException(int revoker, String message) {
        super(message);
        this.revoker = revoker;
    }

    /** The rank that called {@link Communicator#revoke()} (the first one this rank heard of). */
    public int revoker() {
        return revoker;
    }
}
