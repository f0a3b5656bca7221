package dev.panamax.verbs;

import dev.panamax.bindings.verbs.verbs_h;

/** Send work request opcodes ({@code enum ibv_wr_opcode}). */
public enum Opcode {
    /** Two-sided send; consumes a receive posted by the peer. */
    SEND(verbs_h.IBV_WR_SEND(), false),
    /** Send carrying 32 bits of immediate data, delivered in the peer's receive completion. */
    SEND_WITH_IMM(verbs_h.IBV_WR_SEND_WITH_IMM(), false),
    /** One-sided write into the peer's memory (remote address and rkey). */
    RDMA_WRITE(verbs_h.IBV_WR_RDMA_WRITE(), true),
    /** Write that also consumes a receive at the peer and delivers the immediate data in its completion. */
    RDMA_WRITE_WITH_IMM(verbs_h.IBV_WR_RDMA_WRITE_WITH_IMM(), true),
    /** One-sided read from the peer's memory into the local buffer. */
    RDMA_READ(verbs_h.IBV_WR_RDMA_READ(), true);

    private final int nativeValue;
    private final boolean remote;

    Opcode(int nativeValue, boolean remote) {
        this.nativeValue = nativeValue;
        this.remote = remote;
    }

    /** The native value, {@code IBV_WR_*}. */
    public int nativeValue() {
        return nativeValue;
    }

    /** Whether the request needs a remote address and rkey ({@link SendRequest#remote(long, int)}). */
    public boolean isRemote() {
        return remote;
    }
}
