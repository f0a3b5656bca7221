package dev.panamax.lightgbm;

/**
 * A collective that LightGBM called back into Java failed on this rank. The failure happened inside an upcall,
 * where it could not be thrown (an exception must not unwind through LightGBM's frames); it is thrown here, after
 * the LightGBM call that made the upcall returned, and by every later LightGBM call on the thread until its
 * {@link NetworkSession} closes.
 */
public class LightGbmNetworkException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final int rank;

    /** The failure {@code cause} of rank {@code rank}, reported after the LightGBM call {@code call}. */
    public LightGbmNetworkException(int rank, String collective, String call, Throwable cause) {
        super("rank " + rank + ": the " + collective + " that LightGBM called back failed during " + call + ": "
                + cause, cause);
        this.rank = rank;
    }

    /** The rank whose collective failed. */
    public int rank() {
        return rank;
    }
}
