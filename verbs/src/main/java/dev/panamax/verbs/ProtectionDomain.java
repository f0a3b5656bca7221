package dev.panamax.verbs;

import dev.panamax.bindings.Errno;
import dev.panamax.bindings.verbs.ibv_mr;
import dev.panamax.bindings.verbs.ibv_qp;
import dev.panamax.bindings.verbs.ibv_qp_cap;
import dev.panamax.bindings.verbs.ibv_qp_init_attr;
import dev.panamax.bindings.verbs.support.VerbsErrno;
import dev.panamax.bindings.verbs.verbs_h;
import dev.panamax.memory.internal.Closer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A protection domain ({@code struct ibv_pd}): memory regions and queue pairs of one domain work together.
 * It owns them: {@link #close()} closes its queue pairs, then its memory regions, then itself. Owned in turn
 * by its {@link VerbsContext}.
 */
public final class ProtectionDomain implements AutoCloseable {
    private final VerbsContext context;
    private final MemorySegment pd;
    private final Set<MemoryRegion> regions = ConcurrentHashMap.newKeySet();
    private final Set<QueuePair> queuePairs = ConcurrentHashMap.newKeySet();
    private boolean closed;

    ProtectionDomain(VerbsContext context, MemorySegment pd) {
        this.context = context;
        this.pd = pd;
    }

    /** The context this domain belongs to. */
    public VerbsContext context() {
        return context;
    }

    /**
     * Registers {@code segment} (native memory of a live arena) with the device. The region stays
     * registered until {@link MemoryRegion#close()} (or this domain's close).
     *
     * @param accessFlags {@link Access} flags; {@link Access#ALL_REMOTE} for RDMA in both directions
     * @throws IllegalArgumentException when the segment is not native or is empty
     * @throws IllegalStateException    when the segment's arena is closed, or this domain is
     * @throws VerbsException           when {@code ibv_reg_mr} fails
     */
    public MemoryRegion register(MemorySegment segment, int accessFlags) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException("only native segments can be registered: " + segment);
        }
        if (segment.byteSize() == 0) {
            throw new IllegalArgumentException("cannot register an empty segment");
        }
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("cannot register a segment of a closed arena: " + describe(segment));
        }
        synchronized (this) {
            requireOpen();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment errno = Errno.allocate(arena);
                // The header's ibv_reg_mr macro: ibv_reg_mr_iova2 with iova = addr when an optional flag is set.
                MemorySegment mr = (accessFlags & Access.OPTIONAL_RANGE) == 0
                        ? VerbsErrno.ibv_reg_mr(errno, pd, segment, segment.byteSize(), accessFlags)
                        : VerbsErrno.ibv_reg_mr_iova2(errno, pd, segment, segment.byteSize(), segment.address(),
                                accessFlags);
                if (mr.address() == 0) {
                    throw VerbsException.errno("ibv_reg_mr", Errno.errno(errno), "registering " + describe(segment)
                            + " with " + Access.toString(accessFlags) + " on " + context.deviceName());
                }
                MemoryRegion region = new MemoryRegion(this, segment, mr.reinterpret(ibv_mr.sizeof()), accessFlags);
                regions.add(region);
                return region;
            }
        }
    }

    /**
     * Registers {@code segment} like {@link #register(MemorySegment, int)}, and also deregisters the region
     * when {@code owner} closes (usually the arena the segment was allocated from). Either way the region
     * is deregistered exactly once: by whichever of {@link MemoryRegion#close()}, this domain's close or
     * the owner's close comes first.
     */
    public MemoryRegion register(MemorySegment segment, int accessFlags, Arena owner) {
        if (!owner.scope().isAlive()) {
            throw new IllegalStateException("the owner arena is closed");
        }
        MemoryRegion region = register(segment, accessFlags);
        try {
            // A zero-length segment whose only job is to run the cleanup when the owner closes.
            MemorySegment.NULL.reinterpret(owner, ignored -> region.close());
        } catch (RuntimeException e) {
            region.close();
            throw e;
        }
        return region;
    }

    /**
     * A reliable connected queue pair, in state {@link QpState#RESET}; connect it with
     * {@link QueuePair#connect}. Both completion queues must belong to this domain's context. What the provider
     * granted, which may be more than {@code caps} asks for, is {@link QueuePair#capabilities()}.
     *
     * @throws VerbsException when the provider refuses {@code caps} (for example more inline data than the device
     *                        supports: {@code EINVAL})
     */
    public QueuePair createReliableQueuePair(CompletionQueue sendCq, CompletionQueue recvCq, QpCapabilities caps) {
        if (sendCq.context() != context || recvCq.context() != context) {
            throw new IllegalArgumentException("the completion queues belong to another verbs context");
        }
        sendCq.requireOpen();
        recvCq.requireOpen();
        synchronized (this) {
            requireOpen();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment attr = arena.allocate(ibv_qp_init_attr.layout());
                ibv_qp_init_attr.send_cq(attr, sendCq.handle());
                ibv_qp_init_attr.recv_cq(attr, recvCq.handle());
                ibv_qp_init_attr.qp_type(attr, verbs_h.IBV_QPT_RC());
                ibv_qp_init_attr.sq_sig_all(attr, 0); // each send says whether it is signaled
                MemorySegment cap = ibv_qp_init_attr.cap(attr);
                ibv_qp_cap.max_send_wr(cap, caps.maxSendWr());
                ibv_qp_cap.max_recv_wr(cap, caps.maxRecvWr());
                ibv_qp_cap.max_send_sge(cap, caps.maxSendSge());
                ibv_qp_cap.max_recv_sge(cap, caps.maxRecvSge());
                ibv_qp_cap.max_inline_data(cap, caps.maxInlineData());
                MemorySegment errno = Errno.allocate(arena);
                MemorySegment qp = VerbsErrno.ibv_create_qp(errno, pd, attr);
                if (qp.address() == 0) {
                    throw VerbsException.errno("ibv_create_qp", Errno.errno(errno),
                            "reliable connected queue pair with " + caps + " on " + context.deviceName());
                }
                // ibv_create_qp writes back what the provider granted, at least what was asked for.
                QpCapabilities granted = new QpCapabilities(ibv_qp_cap.max_send_wr(cap), ibv_qp_cap.max_recv_wr(cap),
                        ibv_qp_cap.max_send_sge(cap), ibv_qp_cap.max_recv_sge(cap), ibv_qp_cap.max_inline_data(cap));
                QueuePair pair = new QueuePair(this, qp.reinterpret(ibv_qp.sizeof()), sendCq, recvCq, granted);
                queuePairs.add(pair);
                sendCq.attach(pair);
                recvCq.attach(pair);
                return pair;
            }
        }
    }

    MemorySegment handle() {
        return pd;
    }

    /** Whether {@link #close()} has not been called. */
    public synchronized boolean isOpen() {
        return !closed;
    }

    /** Closes this domain's queue pairs, then its memory regions, then the domain. Idempotent. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        Closer closer = new Closer();
        closer.run(this::closeQueuePairs);
        for (MemoryRegion mr : List.copyOf(regions)) {
            closer.run(mr::close);
        }
        closer.run(() -> {
            int rc = verbs_h.ibv_dealloc_pd(pd);
            if (rc != 0) {
                throw VerbsException.returned("ibv_dealloc_pd", rc, "protection domain on " + context.deviceName());
            }
        });
        context.forget(this);
        closer.rethrow();
    }

    /** Closes the queue pairs only: the context does this before closing completion queues. */
    void closeQueuePairs() {
        Closer closer = new Closer();
        for (QueuePair qp : List.copyOf(queuePairs)) {
            closer.run(qp::close);
        }
        closer.rethrow();
    }

    void forget(MemoryRegion mr) {
        regions.remove(mr);
    }

    void forget(QueuePair qp) {
        queuePairs.remove(qp);
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("protection domain on " + context.deviceName() + " is closed");
        }
        context.requireOpen();
    }

    static String describe(MemorySegment segment) {
        return segment.byteSize() + " bytes at 0x" + Long.toHexString(segment.address());
    }
}
