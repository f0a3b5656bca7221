package dev.panamax.verbs;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The registration cache's logic, with a value that records its segment and whether it was released. */
class RangeCacheTest {

    private static final class Value {
        final MemorySegment segment;
        boolean usable = true;
        int releases;

        Value(MemorySegment segment) {
            this.segment = segment;
        }
    }

    private final List<Value> created = new ArrayList<>();

    private RangeCache<Value> cache(int maxEntries) {
        return new RangeCache<>(s -> {
            Value v = new Value(s);
            created.add(v);
            return v;
        }, v -> v.usable, v -> v.releases++, maxEntries);
    }

    @Test
    void theSameSegmentOrOneWithinItIsAHit() {
        RangeCache<Value> c = cache(4);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(4096);
            Value v = c.get(buf);
            assertSame(v, c.get(buf));
            assertSame(v, c.get(buf.asSlice(100, 200)));
            assertSame(v, c.get(buf.asSlice(4095, 1)));
            assertSame(v, c.get(buf.asSlice(0, 0)));
            assertEquals(1, c.misses());
            assertEquals(4, c.hits());
            assertEquals(1, c.size());
        }
    }

    @Test
    void aSegmentReachingBeyondACachedOneIsAMiss() {
        RangeCache<Value> c = cache(4);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(8192);
            Value small = c.get(buf.asSlice(0, 4096));
            Value whole = c.get(buf);
            assertNotSame(small, whole);
            assertEquals(buf, whole.segment);
            assertEquals(2, c.misses());
            // now the larger one covers both; the most recently used covering entry answers
            assertSame(whole, c.get(buf.asSlice(4000, 200)));
            assertEquals(1, c.hits());
        }
    }

    @Test
    void leastRecentlyUsedEntriesAreReleasedBeyondMaxEntries() {
        RangeCache<Value> c = cache(2);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(64), b = arena.allocate(64), d = arena.allocate(64);
            Value va = c.get(a);
            Value vb = c.get(b);
            c.get(a); // a is now the most recently used
            Value vd = c.get(d);
            assertEquals(1, vb.releases, "b was least recently used");
            assertEquals(0, va.releases);
            assertEquals(0, vd.releases);
            assertEquals(2, c.size());
            assertEquals(1, c.evictions());
            assertSame(va, c.get(a));
            Value vb2 = c.get(b);
            assertNotSame(vb, vb2);
            assertEquals(1, vd.releases);
        }
    }

    @Test
    void entriesWhoseArenaClosedAreNotHitsAndAreReleasedOnTheNextMiss() {
        RangeCache<Value> c = cache(4);
        Value dead;
        try (Arena arena = Arena.ofConfined()) {
            dead = c.get(arena.allocate(4096));
        }
        assertEquals(0, dead.releases);
        try (Arena arena = Arena.ofConfined()) {
            Value fresh = c.get(arena.allocate(4096));
            assertNotSame(dead, fresh);
            assertEquals(1, dead.releases);
            assertEquals(1, c.size());
            assertEquals(1, c.evictions());
        }
    }

    @Test
    void unusableValuesAreNotReturned() {
        RangeCache<Value> c = cache(4);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(256);
            Value v = c.get(buf);
            v.usable = false; // for example deregistered elsewhere
            Value w = c.get(buf);
            assertNotSame(v, w);
            assertEquals(1, v.releases);
            assertEquals(2, c.misses());
        }
    }

    @Test
    void dropUnusableAndClearReleaseEveryEntryOnce() {
        RangeCache<Value> c = cache(4);
        Value dead;
        try (Arena arena = Arena.ofConfined()) {
            dead = c.get(arena.allocate(64));
        }
        try (Arena arena = Arena.ofConfined()) {
            Value live = c.get(arena.allocate(64)); // drops the dead one on this miss
            assertEquals(1, dead.releases);
            c.dropUnusable();
            assertEquals(0, live.releases);
            c.clear();
            assertEquals(1, live.releases);
            assertEquals(0, c.size());
        }
        for (Value v : created) {
            assertEquals(1, v.releases);
        }
    }

    @Test
    void aSegmentOfAClosedArenaIsRefused() {
        RangeCache<Value> c = cache(4);
        MemorySegment s;
        try (Arena arena = Arena.ofConfined()) {
            s = arena.allocate(64);
        }
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> c.get(s));
        assertTrue(e.getMessage().contains("closed arena"), e.getMessage());
        assertFalse(created.size() > 0);
        assertThrows(IllegalArgumentException.class, () -> cache(0));
    }

    /** The most recently used entry answers without a walk of the map, and is not answered once it is unusable. */
    @Test
    void repeatedHitsOnTheLatestEntryKeepTheOrderAndNeverReturnAnUnusableValue() {
        RangeCache<Value> c = cache(2);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(64), b = arena.allocate(64), d = arena.allocate(64);
            Value va = c.get(a);
            Value vb = c.get(b);
            assertSame(va, c.get(a));
            assertSame(va, c.get(a.asSlice(8, 8))); // the latest, twice
            c.get(d); // b is the least recently used
            assertEquals(1, vb.releases);
            assertEquals(0, va.releases);
            Value vd = created.get(2);
            vd.usable = false;
            Value again = c.get(d);
            assertNotSame(vd, again);
            assertEquals(1, vd.releases);
            assertEquals(2, c.hits());
            assertEquals(4, c.misses());
        }
    }
}
