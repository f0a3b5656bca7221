package dev.panamax.verbs;

import dev.panamax.bindings.verbs.ibv_sge;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * The one {@code struct ibv_sge} of a {@link SendRequest} or {@link ReceiveRequest} and the region it points
 * into, when the caller named one (so that {@link QueuePair} can check the region before posting).
 */
final class LocalBuffer {
    private final MemorySegment sge;
    private MemoryRegion region;

    LocalBuffer(Arena arena) {
        this.sge = arena.allocate(ibv_sge.layout());
    }

    /** The native {@code struct ibv_sge}. */
    MemorySegment sge() {
        return sge;
    }

    /** The region set by {@link #set(MemoryRegion, long, long)}, or null after a set by address or {@link #clear()}. */
    MemoryRegion region() {
        return region;
    }

    /**
     * {@code byteLength} bytes at {@code offset} in {@code mr}; returns the {@code num_sge} for the request.
     *
     * @throws IndexOutOfBoundsException when the range is not within the region
     */
    int set(MemoryRegion mr, long offset, long byteLength) {
        Objects.checkFromIndexSize(offset, byteLength, mr.byteSize());
        int entries = set(mr.address() + offset, byteLength, mr.lkey());
        region = mr;
        return entries;
    }

    /**
     * {@code byteLength} bytes at {@code address} with {@code lkey}, unchecked; returns the {@code num_sge} for
     * the request: 0 for zero bytes, since some devices read an sge length of 0 as 2 GiB.
     *
     * @throws IllegalArgumentException when {@code byteLength} does not fit the 32-bit length of an {@code ibv_sge}
     */
    int set(long address, long byteLength, int lkey) {
        if (byteLength < 0 || byteLength > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException("a work request moves 0 to 2^32 - 1 bytes: " + byteLength);
        }
        ibv_sge.addr(sge, address);
        ibv_sge.length(sge, (int) byteLength);
        ibv_sge.lkey(sge, lkey);
        region = null;
        return byteLength == 0 ? 0 : 1;
    }

    /** The length last set, as the {@code ibv_sge} holds it. */
    long byteLength() {
        return Integer.toUnsignedLong(ibv_sge.length(sge));
    }

    /** Forgets the region. */
    void clear() {
        region = null;
    }

    /** Checks the region, if one was named, before posting. */
    void requireUsable() {
        if (region != null) {
            region.requireUsable();
        }
    }
}
