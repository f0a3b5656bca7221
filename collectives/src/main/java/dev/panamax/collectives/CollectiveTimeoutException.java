package dev.panamax.collectives;

/** A wait inside a collective ran past the communicator's timeout. */
public class CollectiveTimeoutException extends CollectiveException {
    private static final long serialVersionUID = 1L;

    public CollectiveTimeoutException(String message) {
        super(message);
    }

    public CollectiveTimeoutException(String message, Throwable cause) {
        super(message, cause);
    }
}
