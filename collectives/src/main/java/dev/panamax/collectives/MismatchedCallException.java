package dev.panamax.collectives;

/**
 * With call validation on, the ranks called different collectives or disagreed on the type, the
 * operation, the count, the root or the algorithm. Thrown on every rank, listing each rank's call.
 * Nothing was sent but the descriptors of the calls, so the communicator stays usable.
 */
public final class MismatchedCallException extends CollectiveException {
    private static final long serialVersionUID = 1L;

    public MismatchedCallException(String message) {
        super(message);
    }
}
