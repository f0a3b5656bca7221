package dev.panamax.verbs;

import dev.panamax.bindings.verbs.ibv_recv_wr;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A preallocated receive work request: one {@code struct ibv_recv_wr} with one {@code struct ibv_sge},
 * patched in place and posted with {@link QueuePair#postReceive}. Nothing is allocated per post.
 * Not thread-safe. A new request has no buffer (it accepts zero-length sends and writes with immediate).
 */
public final class ReceiveRequest {
    private final MemorySegment wr;
    private final LocalBuffer local;

    private ReceiveRequest(Arena arena) {
        this.wr = arena.allocate(ibv_recv_wr.layout());
        this.local = new LocalBuffer(arena);
        ibv_recv_wr.next(wr, MemorySegment.NULL);
        ibv_recv_wr.sg_list(wr, local.sge());
        ibv_recv_wr.num_sge(wr, 0);
    }

    /** A request whose native structs live in {@code arena}. */
    public static ReceiveRequest allocate(Arena arena) {
        return new ReceiveRequest(arena);
    }

    /** The id reported in this request's completion. */
    public ReceiveRequest wrId(long wrId) {
        ibv_recv_wr.wr_id(wr, wrId);
        return this;
    }

    /**
     * Where a received message goes: {@code byteLength} bytes at {@code offset} in {@code mr} (registered
     * with {@link Access#LOCAL_WRITE}).
     */
    public ReceiveRequest local(MemoryRegion mr, long offset, long byteLength) {
        ibv_recv_wr.num_sge(wr, local.set(mr, offset, byteLength));
        return this;
    }

    /**
     * Where a received message goes, by address, length and lkey, without the checks
     * {@link QueuePair#postReceive} makes on a {@link MemoryRegion}: the caller answers for the memory.
     */
    public ReceiveRequest local(long address, long byteLength, int lkey) {
        ibv_recv_wr.num_sge(wr, local.set(address, byteLength, lkey));
        return this;
    }

    MemorySegment struct() {
        return wr;
    }

    MemorySegment sge() {
        return local.sge();
    }

    MemoryRegion region() {
        return local.region();
    }

    void requirePostable() {
        local.requireUsable();
    }
}
