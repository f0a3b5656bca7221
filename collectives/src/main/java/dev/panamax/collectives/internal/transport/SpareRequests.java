package dev.panamax.collectives.internal.transport;

import java.util.ArrayDeque;

/**
 * The completed requests a link keeps to post again ({@link Link#recycle}), so that a loop of small messages
 * allocates none: up to {@link #CAPACITY} sends and as many receives. A request is kept only when it is done and of
 * the owning link (a done request is in none of the link's queues), and holds no buffer while it waits
 * ({@link Request#release()}). One per link; used under the link's exclusion, as its sends and receives are.
 *
 * @param <S> the link's send requests
 * @param <R> the link's receive requests
 */
public final class SpareRequests<S extends Request.Send, R extends Request.Receive> {
    /** How many of each kind a link keeps: more than a step keeps in flight on one link. */
    public static final int CAPACITY = 16;

    private final Link owner;
    private final Class<S> sendType;
    private final Class<R> receiveType;
    private final ArrayDeque<S> sends = new ArrayDeque<>(CAPACITY);
    private final ArrayDeque<R> receives = new ArrayDeque<>(CAPACITY);

    public SpareRequests(Link owner, Class<S> sendType, Class<R> receiveType) {
        this.owner = owner;
        this.sendType = sendType;
        this.receiveType = receiveType;
    }

    /** A kept send to {@link Request.Send#reuse reuse}, or null when none is kept. */
    public S pollSend() {
        return sends.poll();
    }

    /** A kept receive to {@link Request.Receive#reuse reuse}, or null when none is kept. */
    public R pollReceive() {
        return receives.poll();
    }

    /** Keeps {@code r} when it is a completed request of the owner and there is room; otherwise leaves it. */
    public void keep(Request r) {
        if (r.link() != owner || !r.isDone()) {
            return;
        }
        if (sendType.isInstance(r)) {
            if (sends.size() < CAPACITY) {
                r.release();
                sends.add(sendType.cast(r));
            }
        } else if (receiveType.isInstance(r) && receives.size() < CAPACITY) {
            r.release();
            receives.add(receiveType.cast(r));
        }
    }
}
