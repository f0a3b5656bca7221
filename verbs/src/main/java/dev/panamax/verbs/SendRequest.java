package dev.panamax.verbs;

import dev.panamax.bindings.verbs.ibv_send_wr;
import dev.panamax.bindings.verbs.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * A preallocated send work request: one {@code struct ibv_send_wr} with one {@code struct ibv_sge}, patched
 * in place by the setters and posted with {@link QueuePair#postSend}, as often as wanted. Nothing is
 * allocated per post. Not thread-safe: one request per posting thread.
 *
 * <p>A new request is a signaled {@link Opcode#SEND} with no buffer (a zero-length send).
 */
public final class SendRequest implements AutoCloseable {
    private static final ValueLayout.OfInt BIG_ENDIAN_INT = ValueLayout.JAVA_INT.withOrder(ByteOrder.BIG_ENDIAN);
    private static final long IMM_DATA = ibv_send_wr.imm_data$offset();
    private static final long REMOTE_ADDR = ibv_send_wr.wr$offset() + ibv_send_wr.wr.rdma$offset()
            + ibv_send_wr.wr.rdma.remote_addr$offset();
    private static final long RKEY = ibv_send_wr.wr$offset() + ibv_send_wr.wr.rdma$offset()
            + ibv_send_wr.wr.rdma.rkey$offset();
    private static final int SIGNALED = verbs_h.IBV_SEND_SIGNALED();
    private static final int INLINE = verbs_h.IBV_SEND_INLINE();
    private static final int FENCE = verbs_h.IBV_SEND_FENCE();

    private final MemorySegment wr;
    private final LocalBuffer local;
    private final Arena ownArena;
    private Opcode opcode;
    private boolean closed;

    private SendRequest(Arena arena, Arena ownArena) {
        this.wr = arena.allocate(ibv_send_wr.layout());
        this.local = new LocalBuffer(arena);
        this.ownArena = ownArena;
        ibv_send_wr.next(wr, MemorySegment.NULL);
        ibv_send_wr.sg_list(wr, local.sge());
        ibv_send_wr.num_sge(wr, 0);
        opcode(Opcode.SEND);
        signaled(true);
    }

    /** A request whose native structs live in {@code arena} (freed when it closes). */
    public static SendRequest allocate(Arena arena) {
        return new SendRequest(arena, null);
    }

    /** A request with its own arena, freed by {@link #close()}. */
    public static SendRequest allocate() {
        Arena own = Arena.ofShared();
        return new SendRequest(own, own);
    }

    /** The id reported in this request's completion. */
    public SendRequest wrId(long wrId) {
        ibv_send_wr.wr_id(wr, wrId);
        return this;
    }

    public SendRequest opcode(Opcode opcode) {
        this.opcode = opcode;
        ibv_send_wr.opcode(wr, opcode.nativeValue());
        return this;
    }

    public Opcode opcode() {
        return opcode;
    }

    /**
     * The local buffer: {@code byteLength} bytes at {@code offset} in {@code mr}. Zero bytes make a request
     * without a scatter/gather entry (a zero-length send or write).
     *
     * @throws IndexOutOfBoundsException when the range is not within the region
     * @throws IllegalArgumentException  when {@code byteLength} does not fit the 32-bit length of an
     *                                   {@code ibv_sge}
     */
    public SendRequest local(MemoryRegion mr, long offset, long byteLength) {
        ibv_send_wr.num_sge(wr, local.set(mr, offset, byteLength));
        return this;
    }

    /**
     * The local buffer by address, length and lkey, without the checks {@link #local(MemoryRegion, long, long)}
     * and {@link QueuePair#postSend} make on a {@link MemoryRegion}: the caller answers for the memory.
     */
    public SendRequest local(long address, long byteLength, int lkey) {
        ibv_send_wr.num_sge(wr, local.set(address, byteLength, lkey));
        return this;
    }

    /** The peer's address and rkey, for {@link Opcode#isRemote() RDMA} opcodes. */
    public SendRequest remote(long remoteAddress, int rkey) {
        wr.set(ValueLayout.JAVA_LONG, REMOTE_ADDR, remoteAddress);
        wr.set(ValueLayout.JAVA_INT, RKEY, rkey);
        return this;
    }

    /** The immediate data of {@code *_WITH_IMM} opcodes, as the peer's {@link WorkCompletions#immediate} reads it. */
    public SendRequest immediate(int imm) {
        wr.set(BIG_ENDIAN_INT, IMM_DATA, imm); // __be32: network byte order on the wire
        return this;
    }

    /** Whether the request produces a completion on success (failures always do). Default true. */
    public SendRequest signaled(boolean signaled) {
        return flag(SIGNALED, signaled);
    }

    /**
     * Whether the payload is copied into the work request when posted ({@code IBV_SEND_INLINE}); it must fit
     * the queue pair's granted {@link QueuePair#capabilities() maxInlineData}. The lkey is then not used, so the
     * payload may be any native memory, registered or not ({@link #local(long, long, int)} with lkey 0), and it
     * may be changed as soon as the post returns, before the request completes. Default false.
     */
    public SendRequest inline(boolean inline) {
        return flag(INLINE, inline);
    }

    /** Whether the request is {@link #inline(boolean) inline}. */
    public boolean isInline() {
        return (ibv_send_wr.send_flags(wr) & INLINE) != 0;
    }

    /** Whether the request waits for earlier RDMA reads on the queue pair to complete ({@code IBV_SEND_FENCE}). */
    public SendRequest fence(boolean fence) {
        return flag(FENCE, fence);
    }

    private SendRequest flag(int bit, boolean on) {
        int flags = ibv_send_wr.send_flags(wr);
        ibv_send_wr.send_flags(wr, on ? flags | bit : flags & ~bit);
        return this;
    }

    /** The native {@code struct ibv_send_wr}. */
    MemorySegment struct() {
        return wr;
    }

    /** The native {@code struct ibv_sge}. */
    MemorySegment sge() {
        return local.sge();
    }

    MemoryRegion region() {
        return local.region();
    }

    /** The length of the local buffer. */
    long byteLength() {
        return local.byteLength();
    }

    /** Checks before posting; see {@link QueuePair#postSend}. */
    void requirePostable() {
        if (closed) {
            throw new IllegalStateException("send request is closed");
        }
        local.requireUsable();
    }

    /** Marks the request unusable and frees its native structs if it owns its arena. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        local.clear();
        if (ownArena != null) {
            ownArena.close();
        }
    }
}
