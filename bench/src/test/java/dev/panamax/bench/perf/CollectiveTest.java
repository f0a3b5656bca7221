package dev.panamax.bench.perf;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CollectiveTest {
    @Test
    void parsesNcclAndPanamaxSpellings() {
        assertEquals(Collective.ALLREDUCE, Collective.parse("allreduce"));
        assertEquals(Collective.ALLREDUCE, Collective.parse("all_reduce"));
        assertEquals(Collective.ALLREDUCE, Collective.parse("allReduce"));
        assertEquals(Collective.REDUCESCATTER, Collective.parse("reduce_scatter"));
        assertEquals(Collective.ALLGATHER, Collective.parse("all-gather"));
        assertEquals(Collective.BROADCAST, Collective.parse("broadcast"));
        assertEquals(Collective.REDUCE, Collective.parse("reduce"));
        assertThrows(IllegalArgumentException.class, () -> Collective.parse("alltoall"));
    }

    @Test
    void busBandwidthFactorsAreNcclTests() {
        assertEquals(1.5, Collective.ALLREDUCE.busBwFactor(4), 1e-12);
        assertEquals(0.0, Collective.ALLREDUCE.busBwFactor(1), 1e-12);
        assertEquals(2.0 * 4 / 5, Collective.ALLREDUCE.busBwFactor(5), 1e-12);
        assertEquals(0.75, Collective.REDUCESCATTER.busBwFactor(4), 1e-12);
        assertEquals(2.0 / 3, Collective.ALLGATHER.busBwFactor(3), 1e-12);
        assertEquals(1.0, Collective.BROADCAST.busBwFactor(8), 1e-12);
        assertEquals(1.0, Collective.REDUCE.busBwFactor(8), 1e-12);
    }

    @Test
    void sizeIsTheLargerBufferAndCountIsPerRankForGatherAndScatter() {
        // all-reduce: 1 MiB of float32 is 262144 elements, both buffers 1 MiB
        assertEquals(262144, Collective.ALLREDUCE.count(1 << 20, 4, 4));
        assertEquals(1 << 20, Collective.ALLREDUCE.sizeBytes(262144, 4, 4));
        // all-gather: 1 MiB total over 4 ranks is 65536 elements per rank
        assertEquals(65536, Collective.ALLGATHER.count(1 << 20, 4, 4));
        assertEquals(65536 * 4, Collective.ALLGATHER.sendBytes(65536, 4, 4));
        assertEquals(1 << 20, Collective.ALLGATHER.recvBytes(65536, 4, 4));
        assertEquals(1 << 20, Collective.ALLGATHER.sizeBytes(65536, 4, 4));
        // reduce-scatter: the send buffer is the large one
        assertEquals(65536, Collective.REDUCESCATTER.count(1 << 20, 4, 4));
        assertEquals(1 << 20, Collective.REDUCESCATTER.sendBytes(65536, 4, 4));
        assertEquals(65536 * 4, Collective.REDUCESCATTER.recvBytes(65536, 4, 4));
        // sizes that do not divide round down, like nccl-tests
        assertEquals(8, Collective.ALLGATHER.count(100, 4, 3));
        assertEquals(96, Collective.ALLGATHER.sizeBytes(8, 4, 3));
        assertEquals(0, Collective.ALLGATHER.count(8, 4, 4));
        assertEquals(2, Collective.BROADCAST.count(9, 4, 4));
    }

    @Test
    void reductionAndRootFlags() {
        assertTrue(Collective.ALLREDUCE.reduces());
        assertTrue(Collective.REDUCE.reduces());
        assertFalse(Collective.ALLGATHER.reduces());
        assertTrue(Collective.BROADCAST.rooted());
        assertFalse(Collective.REDUCESCATTER.rooted());
    }
}
