package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.Request;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;

/** A link for the runtime's unit tests: it moves no messages; a test's subclass overrides what the test looks at. */
class TestLink extends Link {
    TestLink(int peer) {
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
