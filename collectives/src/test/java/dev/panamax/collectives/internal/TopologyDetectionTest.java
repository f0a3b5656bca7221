package dev.panamax.collectives.internal;

import dev.panamax.collectives.Topology;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** Same host = innermost level, when the hosts are symmetric; otherwise flat (hierarchical algorithms degrade). */
class TopologyDetectionTest {

    @Test
    void ranksOfAHostFormTheInnermostLevel() {
        Topology t = ProcessGroup.detectTopology(new String[] {"a", "b", "a", "b", "a", "b"});
        assertArrayEquals(new int[] {3, 2}, t.fanouts());
        assertArrayEquals(new int[] {0, 2, 4}, t.group(2, 0));
        assertArrayEquals(new int[] {1, 3, 5}, t.group(5, 0));
    }

    @Test
    void oneHostOrAsymmetricHostsAreFlat() {
        assertEquals(Topology.flat(3), ProcessGroup.detectTopology(new String[] {"a", "a", "a"}));
        assertEquals(Topology.flat(3), ProcessGroup.detectTopology(new String[] {"a", "a", "b"}));
        assertEquals(Topology.flat(2), ProcessGroup.detectTopology(new String[] {"a", "b"}));
    }
}
