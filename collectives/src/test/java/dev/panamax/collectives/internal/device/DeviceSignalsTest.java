package dev.panamax.collectives.internal.device;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.internal.elastic.AgreementState;
import dev.panamax.collectives.internal.elastic.Membership;
import dev.panamax.collectives.internal.runtime.CommunicatorImpl;
import dev.panamax.collectives.internal.transport.local.HostAllocator;
import dev.panamax.collectives.internal.transport.local.LocalFabric;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The GPU stages' control block set up over a host communicator waits as that communicator does: oversubscribed
 * when the host's ranks outnumber the CPUs they may run on together (the union of their affinity masks), not when
 * they outnumber one rank's CPUs (ranks bound one to a core each see one).
 */
class DeviceSignalsTest {
    /** Agreements and regrouping are not used by the control block. */
    private static final Membership NO_REGROUPING = new Membership() {
        @Override
        public AgreementState.Decision agree(String instance, int[] members, int self, long flags, long timeout) {
            throw new UnsupportedOperationException("not in this test");
        }

        @Override
        public Communicator connect(String name, int[] members, int self, long timeoutNanos) {
            throw new UnsupportedOperationException("not in this test");
        }

        @Override
        public int[] grow(String name, int[] members, int self, int newRanks, long timeoutNanos) {
            throw new UnsupportedOperationException("not in this test");
        }
    };

    @ParameterizedTest(name = "{0} ranks on {1} CPUs")
    @CsvSource({"2,1,true", "2,2,false", "3,2,true", "4,64,false"})
    void waitsAsTheHostCommunicatorDecides(int n, int hostCpus, boolean oversubscribed) {
        LocalFabric fabric = LocalFabric.create(n);
        int[] members = IntStream.range(0, n).toArray();
        DeviceScheduleExecutorTest.onEachRank(n, r -> {
            try (CommunicatorImpl host = new CommunicatorImpl(r, n, fabric.linksOf(r), TimeUnit.SECONDS.toNanos(20),
                    new HostAllocator(), n, hostCpus, null, null,
                    new CommunicatorImpl.Group(NO_REGROUPING, members, "device-signals-test"),
                    () -> fabric.markClosed(r));
                    DeviceSignals signals = DeviceSignals.shared(host)) {
                assertEquals(oversubscribed, host.oversubscribed(), "the host communicator, rank " + r);
                assertEquals(oversubscribed, signals.oversubscribed(), "the control block, rank " + r);
            }
            return null;
        });
    }
}
