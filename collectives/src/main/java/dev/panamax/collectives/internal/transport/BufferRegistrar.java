package dev.panamax.collectives.internal.transport;

import java.lang.foreign.MemorySegment;

/**
 * A transport's hook into the executor: it sees the whole buffers of a call (send, receive and
 * scratch) before the call's schedule runs, so that the slices its links later receive are covered
 * (the verbs transport registers them with the device once, then writes into them directly).
 */
@FunctionalInterface
public interface BufferRegistrar {
    /** Sees the first {@code count} entries of {@code buffers} (null entries are skipped). */
    void register(MemorySegment[] buffers, int count);
}
