package dev.panamax.verbs;

import dev.panamax.memory.concurrent.IdleStrategies;
import dev.panamax.testing.RdmaTest;
import dev.panamax.testing.RdmaTestSupport;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The RDMA device of the tests tagged "rdma" ({@link RdmaTest}): opens it (the first, or the one named by
 * PANAMAX_RDMA_DEVICE) and skips, with the reason, when there is no library, no device or no active port 1
 * (the rule of {@link RdmaTestSupport}); the port's GID index and MTU, and a connected loopback pair.
 */
final class RdmaTestDevice {
    static final int PORT = 1;
    /** Generous: the software RoCE test VM emulates its CPU. */
    static final long TIMEOUT_NANOS = 30_000_000_000L;

    private RdmaTestDevice() {
    }

    static VerbsContext openDevice() {
        if (!Verbs.isAvailable()) {
            RdmaTestSupport.rdmaMissing(Verbs.unavailabilityCause());
        }
        List<RdmaDevice> devices = Verbs.devices();
        if (devices.isEmpty()) {
            RdmaTestSupport.rdmaMissing("no RDMA devices");
        }
        VerbsContext context = Verbs.open(RdmaTestSupport.deviceName());
        PortInfo port = context.queryPort(PORT);
        if (!port.isActive()) {
            context.close();
            RdmaTestSupport.rdmaMissing("port " + PORT + " of " + context.deviceName() + " is not active: " + port);
        }
        return context;
    }

    /** The GID index to connect with: required on RoCE, none (-1) on InfiniBand. */
    static int gidIndex(VerbsContext context) {
        PortInfo port = context.queryPort(PORT);
        return port.isEthernet() ? context.findRoceV2GidIndex(PORT) : -1;
    }

    /** The smaller of the port's active MTU and 1024 bytes, as enum ibv_mtu. */
    static int mtu(VerbsContext context) {
        return Math.min(context.queryPort(PORT).activeMtu(), 3);
    }

    /** Waits for exactly one completion and checks it succeeded. */
    static void awaitOne(CompletionQueue cq, WorkCompletions wcs) {
        assertEquals(1, cq.await(wcs, TIMEOUT_NANOS, IdleStrategies.backoff()), "one completion");
        wcs.requireSuccess(0);
    }

    static void fill(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + seed));
        }
    }

    /**
     * Two RC queue pairs on the same port, each with its own completion queue, connected to each other; with a
     * completion channel, both queues signal it.
     */
    static final class Loopback implements AutoCloseable {
        final VerbsContext context;
        final ProtectionDomain pd;
        final CompletionChannel channel;
        final CompletionQueue cqA;
        final CompletionQueue cqB;
        final QueuePair a;
        final QueuePair b;
        final int gidIndex;

        Loopback() {
            this(false);
        }

        Loopback(boolean withChannel) {
            this(withChannel, QpCapabilities.of(8, 8));
        }

        Loopback(boolean withChannel, QpCapabilities caps) {
            context = openDevice();
            try {
                pd = context.allocateProtectionDomain();
                channel = withChannel ? context.createCompletionChannel() : null;
                cqA = withChannel ? context.createCompletionQueue(16, channel) : context.createCompletionQueue(16);
                cqB = withChannel ? context.createCompletionQueue(16, channel) : context.createCompletionQueue(16);
                a = pd.createReliableQueuePair(cqA, cqA, caps);
                b = pd.createReliableQueuePair(cqB, cqB, caps);
                gidIndex = gidIndex(context);
            } catch (RuntimeException e) {
                context.close();
                throw e;
            }
        }

        /** Connects a and b to each other. */
        Loopback connect() {
            int mtu = mtu(context);
            QpEndpoint ea = a.localEndpoint(PORT, gidIndex, 0x1111);
            QpEndpoint eb = b.localEndpoint(PORT, gidIndex, 0x2222);
            a.connect(ea, eb, PORT, gidIndex, mtu);
            b.connect(eb, ea, PORT, gidIndex, mtu);
            return this;
        }

        @Override
        public void close() {
            context.close();
        }
    }
}
