package dev.panamax.collectives.internal;

/** A posted send or receive on a {@link Link}; completes in the link's FIFO order. */
public abstract class Request {
    protected final Link link;
    protected boolean done;

    protected Request(Link link) {
        this.link = link;
    }

    /** Advances the link; true once this request has completed. Throws on failure. */
    public final boolean poll() {
        if (!done) {
            link.progress();
            if (!done) {
                done = checkComplete();
            }
        }
        return done;
    }

    /** For requests that complete by the peer's action (a consumed send): true once they have. */
    protected boolean checkComplete() {
        return false;
    }

    public final Link link() {
        return link;
    }

    /** For error messages: "send of 4096 bytes to rank 3 over shm". */
    public abstract String describe();
}
