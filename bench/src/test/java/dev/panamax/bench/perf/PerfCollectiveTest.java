package dev.panamax.bench.perf;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PerfCollectiveTest {
    @Test
    void parsesNcclAndPanamaxSpellings() {
        assertEquals(PerfCollective.ALLREDUCE, PerfCollective.parse("allreduce"));
        assertEquals(PerfCollective.ALLREDUCE, PerfCollective.parse("all_reduce"));
        assertEquals(PerfCollective.ALLREDUCE, PerfCollective.parse("allReduce"));
        assertEquals(PerfCollective.REDUCESCATTER, PerfCollective.parse("reduce_scatter"));
        assertEquals(PerfCollective.ALLGATHER, PerfCollective.parse("all-gather"));
        assertEquals(PerfCollective.BROADCAST, PerfCollective.parse("broadcast"));
        assertEquals(PerfCollective.REDUCE, PerfCollective.parse("reduce"));
        assertThrows(IllegalArgumentException.class, () -> PerfCollective.parse("alltoall"));
    }

    @Test
    void busBandwidthFactorsAreNcclTests() {
        assertEquals(1.5, PerfCollective.ALLREDUCE.busBwFactor(4), 1e-12);
        assertEquals(0.0, PerfCollective.ALLREDUCE.busBwFactor(1), 1e-12);
        assertEquals(2.0 * 4 / 5, PerfCollective.ALLREDUCE.busBwFactor(5), 1e-12);
        assertEquals(0.75, PerfCollective.REDUCESCATTER.busBwFactor(4), 1e-12);
        assertEquals(2.0 / 3, PerfCollective.ALLGATHER.busBwFactor(3), 1e-12);
        assertEquals(1.0, PerfCollective.BROADCAST.busBwFactor(8), 1e-12);
        assertEquals(1.0, PerfCollective.REDUCE.busBwFactor(8), 1e-12);
    }

    @Test
    void sizeIsTheLargerBufferAndCountIsPerRankForGatherAndScatter() {
        // all-reduce: 1 MiB of float32 is 262144 elements, both buffers 1 MiB
        assertEquals(262144, PerfCollective.ALLREDUCE.count(1 << 20, 4, 4));
        assertEquals(1 << 20, PerfCollective.ALLREDUCE.sizeBytes(262144, 4, 4));
        // all-gather: 1 MiB total over 4 ranks is 65536 elements per rank
        assertEquals(65536, PerfCollective.ALLGATHER.count(1 << 20, 4, 4));
        assertEquals(65536 * 4, PerfCollective.ALLGATHER.sendBytes(65536, 4, 4));
        assertEquals(1 << 20, PerfCollective.ALLGATHER.recvBytes(65536, 4, 4));
        assertEquals(1 << 20, PerfCollective.ALLGATHER.sizeBytes(65536, 4, 4));
        // reduce-scatter: the send buffer is the large one
        assertEquals(65536, PerfCollective.REDUCESCATTER.count(1 << 20, 4, 4));
        assertEquals(1 << 20, PerfCollective.REDUCESCATTER.sendBytes(65536, 4, 4));
        assertEquals(65536 * 4, PerfCollective.REDUCESCATTER.recvBytes(65536, 4, 4));
        // sizes that do not divide round down, like nccl-tests
        assertEquals(8, PerfCollective.ALLGATHER.count(100, 4, 3));
        assertEquals(96, PerfCollective.ALLGATHER.sizeBytes(8, 4, 3));
        assertEquals(0, PerfCollective.ALLGATHER.count(8, 4, 4));
        assertEquals(2, PerfCollective.BROADCAST.count(9, 4, 4));
    }

    @Test
    void reductionAndRootFlags() {
        assertTrue(PerfCollective.ALLREDUCE.reduces());
        assertTrue(PerfCollective.REDUCE.reduces());
        assertFalse(PerfCollective.ALLGATHER.reduces());
        assertTrue(PerfCollective.BROADCAST.rooted());
        assertFalse(PerfCollective.REDUCESCATTER.rooted());
    }
}
