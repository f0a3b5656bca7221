package dev.panamax.ml;

import dev.panamax.collectives.Communicator;

import java.lang.foreign.MemorySegment;

/**
 * A compression hook's buffer for what crosses the network, from the communicator's allocator (zero-copy between
 * same-host ranks): grown on demand, and taken anew when the hook is handed another communicator (an elastic
 * training's shrink).
 */
final class WireBuffer implements AutoCloseable {
    private MemorySegment wire;
    private Communicator owner;

    /** The first {@code byteSize} bytes of the buffer for {@code comm}. */
    MemorySegment get(Communicator comm, long byteSize) {
        if (wire == null || wire.byteSize() < byteSize || owner != comm) {
            close();
            wire = comm.allocate(Math.max(4096, byteSize));
            owner = comm;
        }
        return wire.asSlice(0, byteSize);
    }

    @Override
    public void close() {
        if (wire != null) {
            try {
                owner.free(wire);
            } catch (RuntimeException ignored) {
                // the communicator was closed first, which freed it
            }
            wire = null;
            owner = null;
        }
    }
}
