package dev.panamax.verbs;

import dev.panamax.bindings.verbs.ibv_mr;
import dev.panamax.bindings.verbs.verbs_h;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A registered memory region ({@code struct ibv_mr}) over one segment: its lkey goes into local
 * scatter/gather entries, its rkey and addresses to peers for RDMA. Lengths and offsets are 64-bit.
 *
 * <p>Deregistered exactly once, by the first of {@link #close()}, its protection domain's close, or (for
 * regions registered with an owner arena) the owner's close. The memory itself belongs to the segment's
 * arena: the region must be closed before, or together with, that arena, and posting work requests over a
 * region whose segment is no longer alive is refused.
 */
public final class MemoryRegion implements AutoCloseable {
    private final ProtectionDomain pd;
    private final MemorySegment segment;
    private final MemorySegment mr;
    private final int lkey;
    private final int rkey;
    private final int accessFlags;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Native deregistrations made (0 or 1): lets tests check the exactly-once rule. */
    volatile int deregistrations;

    MemoryRegion(ProtectionDomain pd, MemorySegment segment, MemorySegment mr, int accessFlags) {
        this.pd = pd;
        this.segment = segment;
        this.mr = mr;
        this.lkey = ibv_mr.lkey(mr);
        this.rkey = ibv_mr.rkey(mr);
        this.accessFlags = accessFlags;
    }

    /** The registered segment. */
    public MemorySegment segment() {
        return segment;
    }

    /** The address of the first registered byte. */
    public long address() {
        return segment.address();
    }

    /** The registered length in bytes. */
    public long byteSize() {
        return segment.byteSize();
    }

    /** The key for local scatter/gather entries. */
    public int lkey() {
        return lkey;
    }

    /** The key a peer uses to RDMA-read or -write this region. */
    public int rkey() {
        return rkey;
    }

    /** The {@link Access} flags it was registered with. */
    public int accessFlags() {
        return accessFlags;
    }

    /** The protection domain it was registered in. */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /** The length the device registered ({@code ibv_mr.length}); equals {@link #byteSize()}. */
    public long registeredByteSize() {
        requireOpen();
        return ibv_mr.length(mr);
    }

    /** Whether the region is still registered. */
    public boolean isOpen() {
        return !closed.get();
    }

    /** Whether {@code [address, address + byteSize)} lies within the region. */
    public boolean covers(long address, long byteSize) {
        long start = segment.address();
        return byteSize >= 0 && address >= start && address - start <= segment.byteSize() - byteSize;
    }

    /**
     * The offset of {@code s} from the start of this region, for {@link SendRequest#local}.
     *
     * @throws IllegalArgumentException when {@code s} is not within the region
     */
    public long offsetOf(MemorySegment s) {
        if (!s.isNative() || !covers(s.address(), s.byteSize())) {
            throw new IllegalArgumentException(ProtectionDomain.describe(s) + " is not within the memory region of "
                    + ProtectionDomain.describe(segment));
        }
        return s.address() - segment.address();
    }

    /**
     * Checks that the region can be used in a work request: registered, and its segment alive.
     *
     * @throws IllegalStateException naming what is wrong
     */
    void requireUsable() {
        if (closed.get()) {
            throw new IllegalStateException("memory region (" + ProtectionDomain.describe(segment)
                    + ", lkey 0x" + Integer.toHexString(lkey) + ") is deregistered");
        }
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("memory region (" + ProtectionDomain.describe(segment)
                    + ") is over a segment whose arena is closed");
        }
    }

    private void requireOpen() {
        if (closed.get()) {
            throw new IllegalStateException("memory region is deregistered");
        }
    }

    /** Deregisters the region ({@code ibv_dereg_mr}). Idempotent; the memory stays with its arena. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        pd.forget(this);
        int rc = verbs_h.ibv_dereg_mr(mr);
        deregistrations++;
        if (rc != 0) {
            throw VerbsException.returned("ibv_dereg_mr", rc, "memory region of " + ProtectionDomain.describe(segment));
        }
    }

    @Override
    public String toString() {
        return "MemoryRegion[" + ProtectionDomain.describe(segment) + ", lkey 0x" + Integer.toHexString(lkey)
                + ", rkey 0x" + Integer.toHexString(rkey) + (isOpen() ? "" : ", deregistered") + "]";
    }
}
