package dev.panamax.collectives;

/** A collective failed: a peer died, a wait timed out, or the ranks disagreed. */
public class CollectiveException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public CollectiveException(String message) {
        super(message);
    }

    public CollectiveException(String message, Throwable cause) {
        super(message, cause);
    }
}
