package dev.panamax.verbs;

import dev.panamax.bindings.Errno;
import dev.panamax.bindings.verbs.ibv_comp_channel;
import dev.panamax.bindings.verbs.support.VerbsErrno;
import dev.panamax.bindings.verbs.verbs_h;
import dev.panamax.memory.internal.Libc;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A completion channel ({@code struct ibv_comp_channel}): a file descriptor on which a thread sleeps until one of
 * the completion queues created on it ({@link VerbsContext#createCompletionQueue(int, CompletionChannel)}) receives
 * a completion, instead of polling them. A queue signals its channel once per
 * {@link CompletionQueue#requestNotification()}, for the first completion that arrives after the request, so a
 * sleeper requests, polls its queues once more (a completion may have come before the request), and only then
 * {@link #await}s.
 *
 * <p>Every event {@link #await} takes is acknowledged at once ({@code ibv_ack_cq_events}), under the lock that a
 * queue's destruction also takes, so destroying a queue never waits for an acknowledgement and never frees a queue
 * between an event and its acknowledgement. One thread at a time awaits; requests and closing may come from any
 * thread. Owned by its {@link VerbsContext}, which closes it after its completion queues.
 */
public final class CompletionChannel implements AutoCloseable {
    private final VerbsContext context;
    private final MemorySegment channel;
    private final int fd;
    private final String name;
    /** Taken by event handling, notification requests and the destruction of this channel's queues. */
    final Object lock = new Object();
    private final Set<CompletionQueue> queues = ConcurrentHashMap.newKeySet();
    // The awaiting thread's scratch; an automatic arena, since a thread may still be in poll(2) when another closes.
    private final MemorySegment pollfd;
    /** The errno of poll(2) and of ibv_get_cq_event, one call at a time. */
    private final MemorySegment callState;
    private final MemorySegment cqOut;
    private final MemorySegment cqContextOut;
    private boolean closed;

    CompletionChannel(VerbsContext context, MemorySegment channel) {
        this.context = context;
        this.channel = channel.reinterpret(ibv_comp_channel.sizeof());
        this.fd = ibv_comp_channel.fd(this.channel);
        this.name = "completion channel (fd " + fd + ") of " + context.deviceName();
        // Non-blocking: await takes events until the descriptor has none left, and another thread may have taken
        // the one poll(2) saw.
        Libc.setNonBlocking(fd);
        Arena arena = Arena.ofAuto();
        this.pollfd = arena.allocate(Libc.POLLFD_BYTES, 8);
        this.callState = Libc.allocateCallState(arena);
        this.cqOut = arena.allocate(ValueLayout.ADDRESS);
        this.cqContextOut = arena.allocate(ValueLayout.ADDRESS);
    }

    /**
     * Sleeps until one of this channel's queues signals a completion, at most {@code timeoutNanos} (rounded up to
     * whole milliseconds), and takes and acknowledges every event there. Returns true when it took one, false on
     * the timeout (or when the channel was closed meanwhile). An event that came as the timeout ran out, after the
     * kernel gave up but before this thread ran again, counts as taken: left there, it would only end the next sleep at
     * once. Allocates nothing.
     *
     * @throws VerbsException when {@code ibv_get_cq_event} fails other than for want of an event
     */
    public boolean await(long timeoutNanos) {
        Libc.pollReadable(fd, timeoutNanos, pollfd, callState);
        return takeEvents() > 0;
    }

    /** Takes and acknowledges the events there without waiting; returns how many. */
    private int takeEvents() {
        int taken = 0;
        synchronized (lock) {
            while (!closed) {
                if (VerbsErrno.ibv_get_cq_event(callState, channel, cqOut, cqContextOut) != 0) {
                    int e = Errno.errno(callState);
                    if (e == Errno.EAGAIN || e == Errno.EINTR) {
                        break;
                    }
                    throw VerbsException.errno("ibv_get_cq_event", e, name);
                }
                verbs_h.ibv_ack_cq_events(cqOut.get(ValueLayout.ADDRESS, 0), 1);
                taken++;
            }
        }
        return taken;
    }

    /** The context it belongs to. */
    public VerbsContext context() {
        return context;
    }

    MemorySegment handle() {
        return channel;
    }

    void attach(CompletionQueue cq) {
        queues.add(cq);
    }

    void detach(CompletionQueue cq) {
        queues.remove(cq);
    }

    void requireOpen() {
        synchronized (lock) {
            if (closed) {
                throw new IllegalStateException(name + " is closed");
            }
        }
    }

    /** Whether {@link #close()} has not been called. */
    public boolean isOpen() {
        synchronized (lock) {
            return !closed;
        }
    }

    /**
     * Destroys the channel ({@code ibv_destroy_comp_channel}). Idempotent.
     *
     * @throws IllegalStateException when open completion queues still use it (close them first)
     */
    @Override
    public void close() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            if (!queues.isEmpty()) {
                throw new IllegalStateException(name + " is used by " + queues.size()
                        + " open completion queue(s); close them first");
            }
            closed = true;
        }
        context.forget(this);
        int rc = verbs_h.ibv_destroy_comp_channel(channel);
        if (rc != 0) {
            throw VerbsException.returned("ibv_destroy_comp_channel", rc, name);
        }
    }

    @Override
    public String toString() {
        return name;
    }
}
