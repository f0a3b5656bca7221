package dev.panamax.collectives;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TopologyTest {

    @Test
    void thePapersFigure4() {
        // 12 GPUs: 3 per node (A0..A2 = ranks 0..2), 2 nodes per rack switch, 2 racks
        Topology t = Topology.parse("3x2x2");
        assertEquals(12, t.size());
        assertEquals(3, t.levels());
        assertArrayEquals(new int[] {0, 1, 2}, t.group(1, 0));   // c(A1, w0) = {A0, A1, A2}
        assertArrayEquals(new int[] {1, 4}, t.group(1, 1));      // c(A1, w1) = {A1, B1}
        assertArrayEquals(new int[] {1, 7}, t.group(1, 2));      // across racks: {A1, C1}
        assertEquals(1, t.coordinate(1, 0));
        assertEquals(1, t.coordinate(4, 1));
        assertEquals(1, t.coordinate(7, 2));
    }

    @Test
    void bandwidthsAndLatenciesParse() {
        Topology t = Topology.parse("2x2:bw=5G,100MB/s:alpha=2us,0.5ms");
        assertEquals(5e9, t.level(0).bytesPerSecond());
        assertEquals(1e8, t.level(1).bytesPerSecond());
        assertEquals(2e-6, t.level(0).latencySeconds(), 1e-15);
        assertEquals(5e-4, t.level(1).latencySeconds(), 1e-15);
        assertEquals(t, Topology.parse(t.toString()));
    }

    @Test
    void badSpecsNameWhatIsWrong() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Topology.parse("3xa")).getMessage()
                .contains("'a'"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Topology.parse("2x2:bw=1G")).getMessage()
                .contains("1 values for 2 levels"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Topology.parse("2x2:speed=1,2")).getMessage()
                .contains("unknown key"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> Topology.parse("2x0")).getMessage()
                .contains(">= 1"));
        assertTrue(assertThrows(IllegalArgumentException.class, () ->
                new Topology(Topology.of(2, 2).levelList(), new int[] {0, 1, 1, 3}))
                .getMessage().contains("permutation"));
    }

    @Test
    void aRankFileGivesLevelsAndPlacement(@TempDir Path dir) throws IOException {
        Path f = dir.resolve("ranks.txt");
        Files.writeString(f, """
                # two nodes of two ranks, ranks interleaved across the nodes
                level 2 bw=10G alpha=1us
                level 2 bw=100M alpha=50us
                rank 0=hostA slot=0
                rank 1=hostB slot=0
                rank 2=hostA slot=1
                rank 3=hostB slot=1
                """);
        Topology t = Topology.load(f);
        assertEquals(4, t.size());
        assertArrayEquals(new int[] {0, 2}, t.group(0, 0));
        assertArrayEquals(new int[] {1, 3}, t.group(3, 0));
        assertArrayEquals(new int[] {0, 1}, t.group(0, 1));
        assertEquals(1e8, t.level(1).bytesPerSecond());
    }

    @Test
    void anAsymmetricRankFileIsRejected(@TempDir Path dir) throws IOException {
        Path f = dir.resolve("ranks.txt");
        Files.writeString(f, "level 2\nlevel 2\nrank 0=a slot=0\nrank 1=a slot=1\nrank 2=a slot=2\nrank 3=b slot=0\n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Topology.load(f));
        assertTrue(e.getMessage().contains("host a runs 3 ranks"), e.getMessage());
    }
}
