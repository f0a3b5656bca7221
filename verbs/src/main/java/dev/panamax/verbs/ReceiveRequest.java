package dev.panamax.verbs;

import dev.panamax.bindings.verbs.ibv_recv_wr;
import dev.panamax.bindings.verbs.ibv_sge;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * A preallocated receive work request: one {@code struct ibv_recv_wr} with one {@code struct ibv_sge},
 * patched in place and posted with {@link QueuePair#postReceive}. Nothing is allocated per post.
 * Not thread-safe. A new request has no buffer (it accepts zero-length sends and writes with immediate).
 */
public final class ReceiveRequest {
    private final MemorySegment wr;
    private final MemorySegment sge;
    private MemoryRegion region;

    private ReceiveRequest(Arena arena) {
        this.wr = arena.allocate(ibv_recv_wr.layout());
        this.sge = arena.allocate(ibv_sge.layout());
        ibv_recv_wr.next(wr, MemorySegment.NULL);
        ibv_recv_wr.sg_list(wr, sge);
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
        Objects.checkFromIndexSize(offset, byteLength, mr.byteSize());
        setLocal(mr.address() + offset, byteLength, mr.lkey());
        this.region = mr;
        return this;
    }

    /**
     * Where a received message goes, by address, length and lkey, without the checks
     * {@link QueuePair#postReceive} makes on a {@link MemoryRegion}: the caller answers for the memory.
     */
    public ReceiveRequest local(long address, long byteLength, int lkey) {
        setLocal(address, byteLength, lkey);
        this.region = null;
        return this;
    }

    private void setLocal(long address, long byteLength, int lkey) {
        if (byteLength < 0 || byteLength > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException("a work request moves 0 to 2^32 - 1 bytes: " + byteLength);
        }
        ibv_sge.addr(sge, address);
        ibv_sge.length(sge, (int) byteLength);
        ibv_sge.lkey(sge, lkey);
        ibv_recv_wr.num_sge(wr, byteLength == 0 ? 0 : 1);
    }

    MemorySegment struct() {
        return wr;
    }

    MemorySegment sge() {
        return sge;
    }

    MemoryRegion region() {
        return region;
    }

    void requirePostable() {
        if (region != null) {
            region.requireUsable();
        }
    }
}
