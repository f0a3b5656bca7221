package dev.panamax.verbs;

import java.lang.foreign.MemorySegment;

/**
 * Registers segments on first use and hands back the same memory region afterwards.
 *
 * <p>{@link #get} returns a region covering the whole segment: a cached region whose registered segment
 * contains {@code [address, address + byteSize)} and is still alive (its arena not closed) counts as a hit;
 * otherwise the segment is registered (a miss). Entries whose segment died, or whose region was closed
 * elsewhere, are dropped on the next miss; beyond {@code maxEntries} the least recently used region is
 * deregistered. A region returned may therefore be deregistered by a later miss: size {@code maxEntries} for
 * every buffer that can have work in flight at once. The cache owns its regions; {@link #close()}
 * deregisters them. Thread-safe.
 */
public final class RegistrationCache implements AutoCloseable {
    private final ProtectionDomain pd;
    private final int accessFlags;
    private final RangeCache<MemoryRegion> cache;
    private boolean closed;

    /**
     * @param pd          the domain regions are registered in
     * @param accessFlags the {@link Access} flags of every region
     * @param maxEntries  the most regions kept registered
     */
    public RegistrationCache(ProtectionDomain pd, int accessFlags, int maxEntries) {
        this.pd = pd;
        this.accessFlags = accessFlags;
        this.cache = new RangeCache<>(s -> pd.register(s, accessFlags), MemoryRegion::isOpen, MemoryRegion::close,
                maxEntries);
    }

    /**
     * A region covering {@code segment}; use {@link MemoryRegion#offsetOf(MemorySegment)} for its offset.
     *
     * @throws IllegalStateException when the segment's arena is closed, or the cache is
     * @throws VerbsException        when registering fails
     */
    public synchronized MemoryRegion get(MemorySegment segment) {
        if (closed) {
            throw new IllegalStateException("registration cache is closed");
        }
        return cache.get(segment);
    }

    /** The protection domain regions are registered in. */
    public ProtectionDomain protectionDomain() {
        return pd;
    }

    /** The access flags of every region. */
    public int accessFlags() {
        return accessFlags;
    }

    /** Regions registered now. */
    public synchronized int size() {
        return cache.size();
    }

    /** Lookups answered by a registered region. */
    public synchronized long hits() {
        return cache.hits();
    }

    /** Lookups that registered a segment. */
    public synchronized long misses() {
        return cache.misses();
    }

    /** Regions deregistered to make room, or dropped because their segment died. */
    public synchronized long evictions() {
        return cache.evictions();
    }

    /** Deregisters the regions whose segment died now, rather than on the next miss. */
    public synchronized void dropDead() {
        cache.dropUnusable();
    }

    /** Deregisters every region. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        cache.clear();
    }

    @Override
    public synchronized String toString() {
        return "RegistrationCache[" + cache.size() + " regions, " + cache.hits() + " hits, " + cache.misses()
                + " misses, " + cache.evictions() + " evictions]";
    }
}
