package dev.panamax.collectives.internal.transport;

import java.lang.foreign.MemorySegment;

/** Segment helpers shared by the transports. */
public final class Segments {
    private Segments() {
    }

    /**
     * The same native memory without its arena's thread confinement, for handing a caller's
     * buffer to another thread (an in-JVM peer, the async worker). The caller guarantees the
     * memory outlives the use: collectives only return, or complete their future, after it.
     * Null stays null; heap segments are returned as they are.
     */
    public static MemorySegment unscoped(MemorySegment s) {
        if (s == null || !s.isNative()) {
            return s;
        }
        return MemorySegment.ofAddress(s.address()).reinterpret(s.byteSize());
    }
}
