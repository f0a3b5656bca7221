package dev.panamax.bench.perf;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RowTest {
    @Test
    void bandwidthsFollowFromSizeAndTime() {
        // 1 MiB all-reduce over 4 ranks in 100 us: algbw 10.48576 GB/s, busbw * 1.5
        Row r = Row.of(PerfCollective.ALLREDUCE, 262144, 4, "float32", "sum", -1, 4, 100, 0, 90, 99, 120, 130);
        assertEquals(1 << 20, r.size());
        assertEquals(10.48576, r.algBw(), 1e-9);
        assertEquals(10.48576 * 1.5, r.busBw(), 1e-9);
        // all-gather: algbw from the total (received) size
        Row g = Row.of(PerfCollective.ALLGATHER, 65536, 4, "float32", "none", -1, 4, 100, 0, 0, 0, 0, 0);
        assertEquals(1 << 20, g.size());
        assertEquals(10.48576 * 0.75, g.busBw(), 1e-9);
        assertEquals(0, Row.algBw(100, 0));
    }

    @Test
    void formatsAlignedWithTheHeader() {
        Row r = Row.of(PerfCollective.ALLREDUCE, 2, 4, "float32", "sum", -1, 4, 10.567, 0, 9, 10, 20, 30)
                .withAlgorithm("ring", "ring");
        String line = r.format(false);
        assertEquals("           8             2   float32     sum      10.57     0.00     0.00       0  ring", line);
        String[] header = Row.header(false).split(System.lineSeparator());
        assertEquals(2, header.length);
        assertTrue(header[0].startsWith("#"));
        assertTrue(header[0].endsWith("#wrong  algorithm"), header[0]);
        assertEquals(line.indexOf("  ring"), header[0].indexOf("  algorithm"));

        Row unchecked = Row.of(PerfCollective.ALLREDUCE, 2, 4, "float32", "sum", -1, 4, 10.567, -1, 9, 10, 20, 30)
                .withAlgorithm("ring", "ring");
        assertTrue(unchecked.format(false).endsWith("N/A  ring"));
        String withPercentiles = r.format(true);
        assertTrue(withPercentiles.endsWith("      10.00      20.00      30.00  ring"), withPercentiles);
        assertEquals(withPercentiles.indexOf("  ring"),
                Row.header(true).split(System.lineSeparator())[0].indexOf("  algorithm"));

        Row waited = r.withWaits(new Row.Waits(1.02, 0.5, 12.3, 1.3, 0, 0.75, 50, 3.5, 2));
        String withWaits = waited.format(true, true);
        assertTrue(withWaits.endsWith(
                "   1.02   50.0     12.3     1.30    0.00    0.75    50.0       3.5      2  ring"),
                withWaits);
        String[] waitsHeader = Row.header(true, true).split(System.lineSeparator());
        assertEquals(withWaits.indexOf("  ring"), waitsHeader[0].indexOf("  algorithm"));
        assertEquals(withWaits.indexOf("  ring"), waitsHeader[1].length());
        assertEquals(withWaits.length(), r.format(true, true).length(), "a row without counts keeps the columns");
    }

    @Test
    void theAlgorithmColumnShowsTheSchedulesAlgorithm() {
        Row r = Row.of(PerfCollective.ALLREDUCE, 2, 4, "float32", "sum", -1, 4, 10, 0, 0, 0, 0, 0);
        assertEquals("blueconnect(2x2:rhd,rhd)",
                r.withAlgorithm("blueconnect", "blueconnect(2x2: rhd,rhd)").algorithmColumn());
        assertEquals("auto:butterfly", r.withAlgorithm("auto", "butterfly").algorithmColumn());
        assertEquals("ring", r.withAlgorithm("ring", "").algorithmColumn());
    }
}
