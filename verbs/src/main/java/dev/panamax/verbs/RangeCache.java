package dev.panamax.verbs;

import dev.panamax.memory.internal.Closer;

import java.lang.foreign.MemorySegment;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The logic of the registration cache, apart from verbs: values made for whole segments, found again for any
 * segment whose address range they cover, least recently used first out. An entry is found only while the
 * segment it was made for is alive and the value is still usable; entries that are not are dropped (and
 * released) on the next miss. Not thread-safe.
 *
 * @param <V> the cached value, for example a memory region
 */
final class RangeCache<V> {
    private record Entry<V>(long id, MemorySegment segment, V value) {
        boolean covers(long address, long byteSize) {
            long start = segment.address();
            return address >= start && address - start <= segment.byteSize() - byteSize;
        }
    }

    private final Function<MemorySegment, V> create;
    private final Predicate<V> usable;
    private final Consumer<V> release;
    private final int maxEntries;
    // Access order: iteration runs from least to most recently used.
    private final LinkedHashMap<Long, Entry<V>> entries = new LinkedHashMap<>(16, 0.75f, true);
    /**
     * The most recently used entry (last in {@link #entries}' order), or null: a loop over one buffer finds it here
     * without walking the map, whose reversed view and iterator are objects made per lookup.
     */
    private Entry<V> latest;
    private long nextId;
    private long hits;
    private long misses;
    private long evictions;

    /**
     * @param create     makes the value for a segment (a miss)
     * @param usable     whether a value may still be returned (for example, a region not deregistered)
     * @param release    frees a value the cache drops
     * @param maxEntries the most entries kept; the least recently used beyond that are released
     */
    RangeCache(Function<MemorySegment, V> create, Predicate<V> usable, Consumer<V> release, int maxEntries) {
        if (maxEntries < 1) {
            throw new IllegalArgumentException("maxEntries must be >= 1: " + maxEntries);
        }
        this.create = create;
        this.usable = usable;
        this.release = release;
        this.maxEntries = maxEntries;
    }

    /**
     * A value covering {@code segment}: a cached one whose segment contains {@code segment}'s address range
     * (a hit), or a new one made for {@code segment} (a miss).
     *
     * @throws IllegalStateException when {@code segment} is not alive
     */
    V get(MemorySegment segment) {
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("segment of a closed arena: " + segment.byteSize() + " bytes at 0x"
                    + Long.toHexString(segment.address()));
        }
        long address = segment.address();
        long byteSize = segment.byteSize();
        Entry<V> m = latest;
        if (m != null && serves(m, address, byteSize)) {
            hits++; // already the most recently used
            return m.value;
        }
        for (Entry<V> e : entries.sequencedValues().reversed()) { // most recently used first
            if (serves(e, address, byteSize)) {
                entries.get(e.id); // mark as most recently used
                latest = e;
                hits++;
                return e.value;
            }
        }
        misses++;
        Closer closer = new Closer();
        dropUnusable(closer);
        V value = create.apply(segment);
        long id = nextId++;
        Entry<V> added = new Entry<>(id, segment, value);
        entries.put(id, added);
        latest = added;
        while (entries.size() > maxEntries) {
            Entry<V> eldest = entries.pollFirstEntry().getValue();
            evictions++;
            closer.run(() -> release.accept(eldest.value));
        }
        closer.rethrow();
        return value;
    }

    /** Whether {@code e} can answer a lookup of these bytes: it covers them, its segment lives, its value is usable. */
    private boolean serves(Entry<V> e, long address, long byteSize) {
        return e.covers(address, byteSize) && e.segment.scope().isAlive() && usable.test(e.value);
    }

    /** Drops and releases the entries whose segment died or whose value is no longer usable. */
    void dropUnusable() {
        Closer closer = new Closer();
        dropUnusable(closer);
        closer.rethrow();
    }

    private void dropUnusable(Closer closer) {
        latest = null;
        for (Iterator<Entry<V>> it = entries.values().iterator(); it.hasNext(); ) {
            Entry<V> e = it.next();
            if (!e.segment.scope().isAlive() || !usable.test(e.value)) {
                it.remove();
                evictions++;
                closer.run(() -> release.accept(e.value));
            }
        }
    }

    /** Releases every entry. */
    void clear() {
        Closer closer = new Closer();
        for (Map.Entry<Long, Entry<V>> e : entries.entrySet()) {
            closer.run(() -> release.accept(e.getValue().value));
        }
        entries.clear();
        latest = null;
        closer.rethrow();
    }

    int size() {
        return entries.size();
    }

    long hits() {
        return hits;
    }

    long misses() {
        return misses;
    }

    /** Entries dropped: beyond {@code maxEntries}, or no longer usable. */
    long evictions() {
        return evictions;
    }
}
