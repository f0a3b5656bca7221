package dev.panamax.verbs;

import dev.panamax.bindings.verbs.ibv_context;
import dev.panamax.bindings.verbs.ibv_context_ops;
import dev.panamax.bindings.verbs.ibv_cq;
import dev.panamax.bindings.verbs.verbs_h;
import dev.panamax.memory.concurrent.IdleStrategy;

import java.lang.foreign.MemorySegment;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A completion queue ({@code struct ibv_cq}), polled by the application: {@link #poll} takes what is there,
 * {@link #await} waits for at least one completion with an {@link IdleStrategy} and a timeout. Neither
 * allocates. Completions are returned whatever their status; check {@link WorkCompletions#isSuccess} or
 * call {@link WorkCompletions#requireSuccess}.
 *
 * <p>A queue created on a {@link CompletionChannel} can also wake a thread that sleeps on the channel: see
 * {@link #requestNotification()}.
 *
 * <p>Owned by its {@link VerbsContext}. It cannot be closed while open queue pairs use it.
 */
public final class CompletionQueue implements AutoCloseable {
    private final VerbsContext context;
    private final MemorySegment cq;
    private final int capacity;
    private final String name;
    // The provider's poll_cq: what the inline ibv_poll_cq calls through cq->context->ops, read once.
    private final MemorySegment pollFunction;
    // The provider's req_notify_cq, which the inline ibv_req_notify_cq calls the same way.
    private final MemorySegment notifyFunction;
    /** The channel it signals, or null. */
    private final CompletionChannel channel;
    private final Set<QueuePair> users = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    CompletionQueue(VerbsContext context, MemorySegment cq, CompletionChannel channel) {
        this.context = context;
        this.channel = channel;
        this.cq = cq.reinterpret(ibv_cq.sizeof());
        this.capacity = ibv_cq.cqe(this.cq);
        this.name = "completion queue " + ibv_cq.handle(this.cq) + " of " + context.deviceName();
        MemorySegment ctx = ibv_cq.context(this.cq).reinterpret(ibv_context.sizeof());
        this.pollFunction = ibv_context_ops.poll_cq(ibv_context.ops(ctx));
        this.notifyFunction = ibv_context_ops.req_notify_cq(ibv_context.ops(ctx));
        if (channel != null) {
            channel.attach(this);
        }
    }

    /** The channel it signals, or null when it was created without one. */
    public CompletionChannel channel() {
        return channel;
    }

    /**
     * Asks for one event on this queue's {@link CompletionChannel} when the next completion arrives
     * ({@code ibv_req_notify_cq} for every completion, not only solicited ones). A completion already in the queue
     * signals nothing: poll once more after asking. Returns false, asking nothing, when the queue is closed (a
     * sleeper may ask while another thread closes it).
     *
     * @throws IllegalStateException when the queue has no channel
     * @throws VerbsException        when {@code ibv_req_notify_cq} fails
     */
    public boolean requestNotification() {
        if (channel == null) {
            throw new IllegalStateException(name + " was created without a completion channel");
        }
        synchronized (channel.lock) {
            if (closed) {
                return false;
            }
            int rc = ibv_context_ops.req_notify_cq.invoke(notifyFunction, cq, 0);
            if (rc != 0) {
                throw VerbsException.returned("ibv_req_notify_cq", rc, name);
            }
            return true;
        }
    }

    /** The number of entries the device allocated (at least the number asked for). */
    public int capacity() {
        return capacity;
    }

    /** The context it belongs to. */
    public VerbsContext context() {
        return context;
    }

    /**
     * Takes up to {@code into.capacity()} completions without waiting and returns how many (0 when none).
     *
     * @throws VerbsException when {@code ibv_poll_cq} fails
     */
    public int poll(WorkCompletions into) {
        if (closed) {
            throw new IllegalStateException(name + " is closed");
        }
        int n = ibv_context_ops.poll_cq.invoke(pollFunction, cq, into.capacity(), into.array());
        if (n < 0) {
            into.setCount(0);
            throw VerbsException.returned("ibv_poll_cq", n, name);
        }
        into.setCount(n);
        return n;
    }

    /**
     * Waits until at least one completion is there, idling with {@code idle} between polls, and takes up to
     * {@code into.capacity()} of them.
     *
     * @return the number taken, at least 1
     * @throws VerbsTimeoutException naming this queue when none arrives within {@code timeoutNanos}
     */
    public int await(WorkCompletions into, long timeoutNanos, IdleStrategy idle) {
        int n = poll(into);
        if (n > 0) {
            return n;
        }
        long start = System.nanoTime();
        idle.reset();
        while (true) {
            idle.idle(0);
            n = poll(into);
            if (n > 0) {
                idle.reset();
                return n;
            }
            if (System.nanoTime() - start >= timeoutNanos) {
                throw new VerbsTimeoutException(name, timeoutNanos);
            }
        }
    }

    MemorySegment handle() {
        return cq;
    }

    void attach(QueuePair qp) {
        users.add(qp);
    }

    void detach(QueuePair qp) {
        users.remove(qp);
    }

    void requireOpen() {
        if (closed) {
            throw new IllegalStateException(name + " is closed");
        }
    }

    /** Whether {@link #close()} has not been called. */
    public boolean isOpen() {
        return !closed;
    }

    /**
     * Destroys the queue ({@code ibv_destroy_cq}). Idempotent.
     *
     * @throws IllegalStateException when open queue pairs still use it (close them first)
     */
    @Override
    public void close() {
        if (channel == null) {
            destroy();
        } else {
            // Under the channel's lock: no event of this queue is between its taking and its acknowledgement
            // (ibv_destroy_cq would wait for that), and no notification request runs beside the destruction.
            synchronized (channel.lock) {
                destroy();
            }
        }
    }

    private void destroy() {
        synchronized (this) {
            if (closed) {
                return;
            }
            if (!users.isEmpty()) {
                throw new IllegalStateException(name + " is used by " + users.size()
                        + " open queue pair(s); close them first");
            }
            closed = true;
        }
        context.forget(this);
        if (channel != null) {
            channel.detach(this);
        }
        int rc = verbs_h.ibv_destroy_cq(cq);
        if (rc != 0) {
            throw VerbsException.returned("ibv_destroy_cq", rc, name);
        }
    }

    @Override
    public String toString() {
        return name;
    }
}
