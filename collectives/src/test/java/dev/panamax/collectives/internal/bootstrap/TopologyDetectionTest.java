package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.Topology;
import dev.panamax.collectives.TransportKind;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** Same host = innermost level, when the hosts are symmetric; otherwise flat (hierarchical algorithms degrade). */
class TopologyDetectionTest {

    @Test
    void ranksOfAHostFormTheInnermostLevel() {
        Topology t = HostIdentity.detectTopology(new String[] {"a", "b", "a", "b", "a", "b"}, TransportKind.AUTO);
        assertArrayEquals(new int[] {3, 2}, t.fanouts());
        assertArrayEquals(new int[] {0, 2, 4}, t.group(2, 0));
        assertArrayEquals(new int[] {1, 3, 5}, t.group(5, 0));
    }

    @Test
    void oneHostOrAsymmetricHostsAreFlat() {
        assertArrayEquals(new int[] {3}, HostIdentity.detectTopology(new String[] {"a", "a", "a"}, TransportKind.AUTO)
                .fanouts());
        assertArrayEquals(new int[] {3}, HostIdentity.detectTopology(new String[] {"a", "a", "b"}, TransportKind.AUTO)
                .fanouts());
        assertArrayEquals(new int[] {2}, HostIdentity.detectTopology(new String[] {"a", "b"}, TransportKind.AUTO)
                .fanouts());
        // one host: shared-memory figures; across hosts: TCP's
        assertEquals(Topology.SHARED_MEMORY.bytesPerSecond(),
                HostIdentity.detectTopology(new String[] {"a", "a"}, TransportKind.AUTO)
                .level(0).bytesPerSecond());
        assertEquals(Topology.TCP.bytesPerSecond(),
                HostIdentity.detectTopology(new String[] {"a", "a"}, TransportKind.TCP)
                .level(0).bytesPerSecond());
    }
}
