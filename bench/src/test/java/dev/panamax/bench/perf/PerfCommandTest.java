package dev.panamax.bench.perf;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The options of panamax-perf and their checks ({@link PerfCommand#validate}). */
class PerfCommandTest {
    private static PerfCommand parse(String... args) {
        PerfCommand m = new PerfCommand(System.out, System.err);
        new CommandLine(m).parseArgs(args);
        m.validate();
        return m;
    }

    @Test
    void readsTheNcclTestsOptions() {
        PerfCommand m = parse("allreduce", "-np", "4", "-t", "shm", "-b", "8", "-e", "64M", "-f", "2", "-n", "20", "-w",
                "5",
                "-c", "1", "-d", "float32", "-o", "sum");
        PerfConfig c = m.config();
        assertEquals(PerfCollective.ALLREDUCE, c.collective());
        assertEquals(DataType.FLOAT32, c.type());
        assertEquals(ReduceOp.SUM, c.op());
        assertEquals(8, c.sizes().getFirst());
        assertEquals(64L << 20, c.sizes().getLast());
        assertEquals(24, c.sizes().size());
        assertEquals(20, c.iters());
        assertEquals(5, c.warmup());
        assertTrue(c.check());
        assertFalse(c.userBuffers());
    }

    @Test
    void acceptsNcclTypeNamesAndIncrements() {
        PerfConfig c = parse("reduce_scatter", "-d", "bf16", "-o", "max", "-b", "1K", "-e", "4K", "-i", "1K", "-c", "0",
                "--user-buffers").config();
        assertEquals(PerfCollective.REDUCESCATTER, c.collective());
        assertEquals(DataType.BFLOAT16, c.type());
        assertEquals(ReduceOp.MAX, c.op());
        assertEquals(List.of(1024L, 2048L, 3072L, 4096L), c.sizes());
        assertFalse(c.check());
        assertTrue(c.userBuffers());
        assertEquals("none", parse("allgather", "-o", "prod").config().redopName());
        assertEquals("float16", parse("allreduce", "-d", "half").config().type().canonicalName());
    }

    @Test
    void readsAlgorithmsTopologyAndTheNewOptions() {
        assertEquals(List.of("auto"), parse("allreduce").config().algorithms());
        PerfCommand m = parse("allreduce", "-np", "4", "-a", "ring,RHD,ring, blueconnect", "--topology",
                "2x2:bw=5G,50M:alpha=5us,100us",
                "--timeout", "7.5", "--plot", "out.svg", "--plot-metric", "time", "--print-schedule",
                        "--print-schedule-rank", "3");
        assertEquals(List.of("ring", "rhd", "blueconnect"), m.config().algorithms());
        assertEquals("2x2:bw=5G,50M:alpha=5us,100us", m.config().topology());
        assertEquals(7.5, m.timeoutSeconds);
        assertEquals("first", m.printSchedule);
        assertEquals(3, m.printScheduleRank);
        assertEquals("all", parse("allreduce", "--print-schedule=all").printSchedule);
        assertTrue(parse("allreduce", "--explain").explain);
        assertEquals(0, parse("allreduce").config().straggleNanos());
        assertEquals(5_000_000, parse("allreduce", "--straggle", "5000").config().straggleNanos());
        assertEquals(10_000_000_000L, parse("allreduce").config().jitQuietMaxNanos());
        assertEquals(90_500_000_000L, parse("allreduce", "--jit-quiet-max", "90.5").config().jitQuietMaxNanos());
        assertEquals(List.of("auto", "ring"),
                parse("allreduce", "--algorithm", "auto", "-a", "ring").config().algorithms());
        // --calibrate needs no collective and sweeps 8 B .. 64 MiB unless told otherwise
        PerfCommand cal = parse("--calibrate");
        assertTrue(cal.calibrate);
        assertEquals(64L << 20, cal.config().sizes().getLast());
        assertEquals(1L << 20, parse("--calibrate", "-e", "1M").config().sizes().getLast());
    }

    @Test
    void unknownAlgorithmsFailFastWithTheKnownList() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "-a",
                "ring,tree"));
        assertTrue(e.getMessage().contains("'tree'") && e.getMessage().contains("known: ring, rhd")
                && e.getMessage().contains("auto"), e.getMessage());
        // an algorithm without this collective
        e = assertThrows(IllegalArgumentException.class, () -> parse("broadcast", "-a", "butterfly"));
        assertTrue(e.getMessage().contains("known: "), e.getMessage());
        // an algorithm that cannot run this rank count
        e = assertThrows(IllegalArgumentException.class, () -> parse("reducescatter", "-np", "3", "-a", "rhd"));
        assertTrue(e.getMessage().contains("power-of-two"), e.getMessage());
    }

    @Test
    void rejectsBadValues() {
        assertThrows(IllegalArgumentException.class, () -> parse("alltoall"));
        parse("allreduce", "-t", "auto");
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "-t", "ib"));
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "-np", "0"));
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "-b", "64M", "-e", "8"));
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "-f", "1"));
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "-f", "2", "-i", "8"));
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "-c", "2"));
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "-n", "0"));
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "-d", "complex"));
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "-o", "xor"));
        assertThrows(IllegalArgumentException.class, () -> parse("broadcast", "-np", "2", "-r", "2"));
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "--timeout", "0"));
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "--straggle", "-1"));
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "--jit-quiet-max", "-1"));
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "--jit-quiet-max", "NaN"));
        assertThrows(IllegalArgumentException.class, () -> parse());
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "-np", "4", "--topology", "3x2"));
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "-np", "4", "--topology", "2y2"));
        assertThrows(IllegalArgumentException.class, () ->
                parse("allreduce", "-np", "4", "--print-schedule-rank", "4"));
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "--print-schedule=some"));
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "--plot", "out.jpg"));
        assertThrows(IllegalArgumentException.class, () -> parse("allreduce", "--plot-metric", "algbw"));
    }
}
