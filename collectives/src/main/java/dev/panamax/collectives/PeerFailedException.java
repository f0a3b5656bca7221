package dev.panamax.collectives;

/** A peer rank died or closed its connection; {@link #peer()} names it. */
public class PeerFailedException extends CollectiveException {
    private static final long serialVersionUID = 1L;
    private final int peer;

    public PeerFailedException(int peer, String message, Throwable cause) {
        super(message, cause);
        this.peer = peer;
    }

    /** The rank that failed. */
    public int peer() {
        return peer;
    }
}
