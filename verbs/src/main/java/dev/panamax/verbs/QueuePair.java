package dev.panamax.verbs;

import dev.panamax.bindings.verbs.ibv_ah_attr;
import dev.panamax.bindings.verbs.ibv_context;
import dev.panamax.bindings.verbs.ibv_context_ops;
import dev.panamax.bindings.verbs.ibv_global_route;
import dev.panamax.bindings.verbs.ibv_qp;
import dev.panamax.bindings.verbs.ibv_qp_attr;
import dev.panamax.bindings.verbs.ibv_qp_init_attr;
import dev.panamax.bindings.verbs.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A reliable connected queue pair ({@code struct ibv_qp}, {@code IBV_QPT_RC}).
 *
 * <p>Life: created in {@link QpState#RESET} by {@link ProtectionDomain#createReliableQueuePair}; exchange
 * {@link #localEndpoint} with the peer; {@link #connect} moves it through INIT and RTR to RTS (or step by step:
 * {@link #initialize}, {@link #readyToReceive}, {@link #readyToSend}). Receives may be posted from INIT on,
 * so they can be in place before the peer can send; sends in RTS only. Posting does not allocate.
 *
 * <p>The state this object checks before posting is the last one it set or read: a queue pair the device
 * moved to ERROR (after a failed work request) is seen by {@link #state()}, which asks the device; work
 * posted before that is flushed with status {@code IBV_WC_WR_FLUSH_ERR}.
 *
 * <p>Owned by its {@link ProtectionDomain}; it must be closed before its completion queues.
 */
public final class QueuePair implements AutoCloseable {
    /** Defaults for connecting, as commonly used for RC over InfiniBand and RoCE. */
    private static final int MIN_RNR_TIMER = 12;     // 0.64 ms between receiver-not-ready retries
    private static final int TIMEOUT = 14;           // 4.096 us * 2^14 = 67 ms local ACK timeout
    private static final int RETRY_COUNT = 7;
    private static final int RNR_RETRY = 7;          // 7: retry forever while the peer has no receive posted
    private static final int MAX_RD_ATOMIC = 1;      // outstanding RDMA reads (initiator and target)
    private static final int HOP_LIMIT = 64;
    private static final int PSN_MASK = 0xFF_FFFF;

    private final ProtectionDomain pd;
    private final MemorySegment qp;
    private final CompletionQueue sendCq;
    private final CompletionQueue recvCq;
    private final int qpNumber;
    private final QpCapabilities capabilities;
    private final String name;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment badSendWr;
    private final MemorySegment badRecvWr;
    // The provider's post_send and post_recv, which the inline ibv_post_send and ibv_post_recv call through
    // qp->context->ops; read once.
    private final MemorySegment postSendFunction;
    private final MemorySegment postRecvFunction;
    private volatile QpState state = QpState.RESET;
    private volatile int port;
    private volatile boolean closed;

    QueuePair(ProtectionDomain pd, MemorySegment qp, CompletionQueue sendCq, CompletionQueue recvCq,
            QpCapabilities capabilities) {
        this.pd = pd;
        this.capabilities = capabilities;
        this.qp = qp;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
        this.qpNumber = ibv_qp.qp_num(qp);
        this.name = "queue pair " + qpNumber + " of " + pd.context().deviceName();
        this.badSendWr = arena.allocate(ValueLayout.ADDRESS);
        this.badRecvWr = arena.allocate(ValueLayout.ADDRESS);
        MemorySegment ops = ibv_context.ops(ibv_qp.context(qp).reinterpret(ibv_context.sizeof()));
        this.postSendFunction = ibv_context_ops.post_send(ops);
        this.postRecvFunction = ibv_context_ops.post_recv(ops);
    }

    /** The queue pair number, which the peer connects to. */
    public int qpNumber() {
        return qpNumber;
    }

    /**
     * What the provider granted when it created this queue pair: at least what was asked for, and the most a
     * {@link SendRequest#inline(boolean) inline} send may carry ({@link QpCapabilities#maxInlineData()}).
     */
    public QpCapabilities capabilities() {
        return capabilities;
    }

    /** The protection domain it belongs to. */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /** The state as the device reports it now ({@code ibv_query_qp}). */
    public QpState state() {
        requireOpen();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(ibv_qp_attr.layout());
            MemorySegment init = a.allocate(ibv_qp_init_attr.layout());
            int rc = verbs_h.ibv_query_qp(qp, attr, verbs_h.IBV_QP_STATE(), init);
            if (rc != 0) {
                throw VerbsException.returned("ibv_query_qp", rc, name);
            }
            QpState s = QpState.of(ibv_qp_attr.qp_state(attr));
            state = s;
            return s;
        }
    }

    /** The state this object last set or read, without asking the device. */
    public QpState lastKnownState() {
        return state;
    }

    /**
     * This side's connection parameters.
     *
     * @param gidIndex the GID to use ({@link VerbsContext#findRoceV2GidIndex}); {@code -1} for none
     *                 (InfiniBand within a subnet)
     * @param psn      the initial packet sequence number (24 bits; for example random)
     */
    public QpEndpoint localEndpoint(int port, int gidIndex, int psn) {
        requireOpen();
        VerbsContext context = pd.context();
        int lid = context.queryPort(port).lid();
        byte[] gid = gidIndex >= 0 ? context.queryGid(port, gidIndex) : new byte[16];
        return new QpEndpoint(qpNumber, psn & PSN_MASK, lid, gid);
    }

    /**
     * RESET to INIT on {@code port}, with remote read and write allowed: receives may be posted from here on.
     * {@link #connect} does this itself when the queue pair is still in RESET.
     */
    public void initialize(int port) {
        requireOpen();
        if (state != QpState.RESET) {
            throw new IllegalStateException(name + " is in state " + state + ", not RESET");
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(ibv_qp_attr.layout());
            ibv_qp_attr.qp_state(attr, QpState.INIT.nativeValue());
            ibv_qp_attr.pkey_index(attr, (short) 0);
            ibv_qp_attr.port_num(attr, (byte) port);
            ibv_qp_attr.qp_access_flags(attr, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
            modify(attr, verbs_h.IBV_QP_STATE() | verbs_h.IBV_QP_PKEY_INDEX() | verbs_h.IBV_QP_PORT()
                    | verbs_h.IBV_QP_ACCESS_FLAGS(), QpState.INIT, "port " + port);
            this.port = port;
        }
    }

    /**
     * Connects to the peer: RESET to INIT (unless {@link #initialize} did), then {@link #readyToReceive} and
     * {@link #readyToSend}.
     *
     * @param local    this side's endpoint, as sent to the peer (its PSN is the send PSN)
     * @param remote   the peer's endpoint
     * @param gidIndex the local GID index; required on RoCE, where the address carries a global route header;
     *                 {@code -1} for InfiniBand within a subnet (addressed by LID)
     * @param mtu      the path MTU in bytes (256 ... 4096) or as {@code enum ibv_mtu} (1 ... 5, as
     *                 {@link PortInfo#activeMtu()}); at most both ports' active MTU
     * @throws VerbsException naming the transition that failed
     */
    public void connect(QpEndpoint local, QpEndpoint remote, int port, int gidIndex, int mtu) {
        requireOpen();
        Mtu.toIbv(mtu); // check before changing anything
        if (local.qpNumber() != qpNumber) {
            throw new IllegalArgumentException("local endpoint is of queue pair " + local.qpNumber() + ", not "
                    + qpNumber);
        }
        if (state == QpState.RESET) {
            initialize(port);
        }
        readyToReceive(remote, port, gidIndex, mtu);
        readyToSend(local);
    }

    /**
     * INIT to RTR: addressed at {@code remote}, the queue pair accepts its packets (parameters as
     * {@link #connect}).
     */
    public void readyToReceive(QpEndpoint remote, int port, int gidIndex, int mtu) {
        requireOpen();
        int ibvMtu = Mtu.toIbv(mtu);
        if (state != QpState.INIT) {
            throw new IllegalStateException(name + " is in state " + state + "; RTR needs INIT");
        }
        if (this.port != port) {
            throw new IllegalArgumentException(name + " was initialized on port " + this.port + ", not " + port);
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(ibv_qp_attr.layout());
            ibv_qp_attr.qp_state(attr, QpState.RTR.nativeValue());
            ibv_qp_attr.path_mtu(attr, ibvMtu);
            ibv_qp_attr.dest_qp_num(attr, remote.qpNumber());
            ibv_qp_attr.rq_psn(attr, remote.psn());
            ibv_qp_attr.max_dest_rd_atomic(attr, (byte) MAX_RD_ATOMIC);
            ibv_qp_attr.min_rnr_timer(attr, (byte) MIN_RNR_TIMER);
            MemorySegment ah = ibv_qp_attr.ah_attr(attr);
            ibv_ah_attr.dlid(ah, (short) remote.lid());
            ibv_ah_attr.sl(ah, (byte) 0);
            ibv_ah_attr.src_path_bits(ah, (byte) 0);
            ibv_ah_attr.port_num(ah, (byte) port);
            if (gidIndex >= 0) {
                ibv_ah_attr.is_global(ah, (byte) 1);
                MemorySegment grh = ibv_ah_attr.grh(ah);
                MemorySegment.copy(remote.gid(), 0, ibv_global_route.dgid(grh), ValueLayout.JAVA_BYTE, 0, 16);
                ibv_global_route.sgid_index(grh, (byte) gidIndex);
                ibv_global_route.hop_limit(grh, (byte) HOP_LIMIT);
                ibv_global_route.traffic_class(grh, (byte) 0);
                ibv_global_route.flow_label(grh, 0);
            }
            modify(attr, verbs_h.IBV_QP_STATE() | verbs_h.IBV_QP_AV() | verbs_h.IBV_QP_PATH_MTU()
                            | verbs_h.IBV_QP_DEST_QPN() | verbs_h.IBV_QP_RQ_PSN() | verbs_h.IBV_QP_MAX_DEST_RD_ATOMIC()
                            | verbs_h.IBV_QP_MIN_RNR_TIMER(), QpState.RTR,
                    "to " + remote + ", gid index " + gidIndex + ", mtu " + Mtu.bytes(ibvMtu));
        }
    }

    /** RTR to RTS: the queue pair sends, starting at {@code local}'s PSN. */
    public void readyToSend(QpEndpoint local) {
        requireOpen();
        if (state != QpState.RTR) {
            throw new IllegalStateException(name + " is in state " + state + "; RTS needs RTR");
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(ibv_qp_attr.layout());
            ibv_qp_attr.qp_state(attr, QpState.RTS.nativeValue());
            ibv_qp_attr.sq_psn(attr, local.psn());
            ibv_qp_attr.timeout(attr, (byte) TIMEOUT);
            ibv_qp_attr.retry_cnt(attr, (byte) RETRY_COUNT);
            ibv_qp_attr.rnr_retry(attr, (byte) RNR_RETRY);
            ibv_qp_attr.max_rd_atomic(attr, (byte) MAX_RD_ATOMIC);
            modify(attr, verbs_h.IBV_QP_STATE() | verbs_h.IBV_QP_SQ_PSN() | verbs_h.IBV_QP_TIMEOUT()
                    | verbs_h.IBV_QP_RETRY_CNT() | verbs_h.IBV_QP_RNR_RETRY() | verbs_h.IBV_QP_MAX_QP_RD_ATOMIC(),
                    QpState.RTS, "send psn " + local.psn());
        }
    }

    /**
     * Moves the queue pair to ERROR: outstanding work completes with flush errors and further posts are
     * refused. Used to tear a connection down.
     */
    public void toError() {
        requireOpen();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment attr = a.allocate(ibv_qp_attr.layout());
            ibv_qp_attr.qp_state(attr, QpState.ERROR.nativeValue());
            modify(attr, verbs_h.IBV_QP_STATE(), QpState.ERROR, null);
        }
    }

    private void modify(MemorySegment attr, int mask, QpState target, String detail) {
        int rc = verbs_h.ibv_modify_qp(qp, attr, mask);
        if (rc != 0) {
            throw VerbsException.returned("ibv_modify_qp", rc, name + " " + state + " -> " + target
                    + (detail == null ? "" : " (" + detail + ")"));
        }
        state = target;
    }

    /**
     * Posts a send work request ({@code ibv_post_send}). The request may be patched and posted again as soon
     * as this returns (the device has copied it).
     *
     * @throws IllegalStateException when this queue pair is closed or not in RTS (for example in ERROR), or
     *                               the request's memory region is deregistered or its arena closed
     * @throws IllegalArgumentException when the request is of another domain's region, or inline and longer than
     *                               this queue pair's granted {@code maxInlineData}
     * @throws VerbsException        when the provider refuses the request (for example, the send queue is full)
     */
    public void postSend(SendRequest request) {
        if (closed) {
            throw new IllegalStateException(name + " is closed");
        }
        QpState s = state;
        if (s != QpState.RTS) {
            throw new IllegalStateException("cannot post a send to " + name + " in state " + s
                    + (s == QpState.ERROR ? "" : "; connect it first"));
        }
        request.requirePostable();
        MemoryRegion mr = request.region();
        if (mr != null && mr.protectionDomain() != pd) {
            throw new IllegalArgumentException("memory region " + mr + " is of another protection domain");
        }
        if (request.isInline() && request.byteLength() > capabilities.maxInlineData()) {
            throw new IllegalArgumentException("an inline send of " + request.byteLength() + " bytes on " + name
                    + ", which takes at most " + capabilities.maxInlineData() + " inline");
        }
        int rc = ibv_context_ops.post_send.invoke(postSendFunction, qp, request.struct(), badSendWr);
        if (rc != 0) {
            throw VerbsException.returned("ibv_post_send", rc, name + ", " + request.opcode());
        }
    }

    /**
     * Posts a receive work request ({@code ibv_post_recv}).
     *
     * @throws IllegalStateException when this queue pair is closed, in RESET or in ERROR, or the request's
     *                               memory region is deregistered or its arena closed
     * @throws VerbsException        when the provider refuses the request (for example, the receive queue is full)
     */
    public void postReceive(ReceiveRequest request) {
        if (closed) {
            throw new IllegalStateException(name + " is closed");
        }
        QpState s = state;
        if (s == QpState.RESET || s == QpState.ERROR) {
            throw new IllegalStateException("cannot post a receive to " + name + " in state " + s);
        }
        request.requirePostable();
        MemoryRegion mr = request.region();
        if (mr != null && mr.protectionDomain() != pd) {
            throw new IllegalArgumentException("memory region " + mr + " is of another protection domain");
        }
        int rc = ibv_context_ops.post_recv.invoke(postRecvFunction, qp, request.struct(), badRecvWr);
        if (rc != 0) {
            throw VerbsException.returned("ibv_post_recv", rc, name);
        }
    }

    /** Whether {@link #close()} has not been called. */
    public synchronized boolean isOpen() {
        return !closed;
    }

    /** Destroys the queue pair ({@code ibv_destroy_qp}). Idempotent. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        int rc = verbs_h.ibv_destroy_qp(qp);
        sendCq.detach(this);
        recvCq.detach(this);
        pd.forget(this);
        arena.close();
        if (rc != 0) {
            throw VerbsException.returned("ibv_destroy_qp", rc, name);
        }
    }

    private void requireOpen() {
        if (!isOpen()) {
            throw new IllegalStateException(name + " is closed");
        }
    }

    @Override
    public String toString() {
        return name + " (" + state + ")";
    }
}
