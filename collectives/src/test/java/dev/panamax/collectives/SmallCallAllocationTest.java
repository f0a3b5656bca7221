package dev.panamax.collectives;

import com.sun.management.ThreadMXBean;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A loop of small all-reduces on shared memory allocates next to nothing per call: the links post their handed-back
 * requests again and the call path makes no closure per call, so a training or benchmark loop runs without young
 * collections pausing a rank (every pause stalls its peers too). Counted with the JVM's per-thread allocation
 * counter, not timed.
 */
@EnabledOnOs(OS.LINUX)
class SmallCallAllocationTest {
    private static final int WARM_UP_CALLS = 60_000;
    private static final int CALLS = 20_000;
    /**
     * Nothing, but for the odd one-off growth of a queue spread over the calls; interpreted or compiled alike, so no
     * escape analysis is relied on. The two requests a call posts were about 110 bytes, a closure about 40.
     */
    private static final long MAX_BYTES_PER_CALL = 8;

    /** 2 floats fold in the scalar loop; 16 and 256 go through the vector kernels as well. */
    @ParameterizedTest
    @ValueSource(ints = {2, 16, 256})
    void aLoopOfSmallAllReducesOnSharedMemoryAllocatesAlmostNothing(int count) throws Exception {
        ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
        assertTrue(threads.isThreadAllocatedMemorySupported());
        List<Communicator> comms = Ranks.Transport.SHM.open(2);
        long[] bytesPerCall = new long[2];
        try {
            RankThreads.run(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment send = arena.allocate(4L * count, 8);
                    MemorySegment recv = arena.allocate(4L * count, 8);
                    for (int i = 0; i < count; i++) {
                        send.setAtIndex(ValueLayout.JAVA_FLOAT, i, (c.rank() + 1) * (i + 1));
                    }
                    long before = 0;
                    for (int call = 0; call < WARM_UP_CALLS + CALLS; call++) {
                        if (call == WARM_UP_CALLS) {
                            before = threads.getCurrentThreadAllocatedBytes();
                        }
                        recv.fill((byte) 0);
                        c.allReduce(send, recv, count, DataType.FLOAT32, ReduceOp.SUM);
                        int last = count - 1;
                        if (recv.getAtIndex(ValueLayout.JAVA_FLOAT, 0) != 3f
                                || recv.getAtIndex(ValueLayout.JAVA_FLOAT, last) != 3f * count) {
                            throw new AssertionError("call " + call + ": " + recv.getAtIndex(ValueLayout.JAVA_FLOAT, 0)
                                    + ", " + recv.getAtIndex(ValueLayout.JAVA_FLOAT, last) + " instead of 3, "
                                    + 3f * count);
                        }
                    }
                    bytesPerCall[c.rank()] = (threads.getCurrentThreadAllocatedBytes() - before) / CALLS;
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
        for (int r = 0; r < 2; r++) {
            assertTrue(bytesPerCall[r] < MAX_BYTES_PER_CALL,
                    "rank " + r + " allocated " + bytesPerCall[r] + " bytes per all-reduce of " + count + " floats");
        }
    }
}
