package dev.panamax.collectives.internal.transport;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;

/** A link for unit tests: it moves no messages; a test's subclass overrides what the test looks at. */
public class TestLink extends Link {
    public TestLink(int peer) {
        super(peer);
    }

    @Override
    public String kind() {
        return "test";
    }

    @Override
    public Request send(MemorySegment src) {
        throw new UnsupportedOperationException();
    }

    @Override
    public Request recv(MemorySegment dst, MemorySegment with, double withScale, double incomingScale,
            DataType type, ReduceOp op) {
        throw new UnsupportedOperationException();
    }

    @Override
    protected void doProgress() {
    }

    @Override
    protected void doCheckPeer() {
    }

    @Override
    protected void signalClose() {
    }

    @Override
    protected void release() {
    }
}
