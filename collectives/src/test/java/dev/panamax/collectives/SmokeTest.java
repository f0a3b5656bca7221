package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** A quick all-reduce over each transport, for fast feedback before the full contract grid. */
class SmokeTest {
    @ParameterizedTest
    @EnumSource(value = Ranks.Transport.class, names = {"LOCAL", "SHM", "TCP"})
    void twoRanksSumOneFloat(Ranks.Transport t) {
        List<Communicator> comms = t.open(2);
        try {
            RankThreads.run(comms, c -> {
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment s = a.allocate(4, 4);
                    MemorySegment r = a.allocate(4, 4);
                    s.set(ValueLayout.JAVA_FLOAT, 0, c.rank() + 1);
                    c.allReduce(s, r, 1, DataType.FLOAT32, ReduceOp.SUM);
                    assertEquals(3f, r.get(ValueLayout.JAVA_FLOAT, 0));
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
    }
}
