package dev.panamax.collectives;

import com.sun.management.ThreadMXBean;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
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

    /** How a call reduces: the plain sum, an average (a pre-multiplied sum by 1/size), a pre-multiplied sum. */
    enum Call {
        SUM, AVERAGE, PRE_MULTIPLIED_SUM
    }

    /**
     * 2 floats fold in the scalar loop; 16 and 256 go through the vector kernels as well. Each over the ranks' shared
     * windows (the default at these sizes) and, with the windows off, through the schedules.
     */
    @ParameterizedTest(name = "{1} of {0} floats, windows {2}")
    @CsvSource({"2, SUM, true", "16, SUM, true", "256, SUM, true", "2, AVERAGE, true", "16, AVERAGE, true",
        "256, AVERAGE, true", "2, PRE_MULTIPLIED_SUM, true", "16, PRE_MULTIPLIED_SUM, true",
        "256, PRE_MULTIPLIED_SUM, true", "2, SUM, false", "16, SUM, false", "256, SUM, false", "2, AVERAGE, false",
        "16, AVERAGE, false", "256, AVERAGE, false", "2, PRE_MULTIPLIED_SUM, false", "16, PRE_MULTIPLIED_SUM, false",
        "256, PRE_MULTIPLIED_SUM, false"})
    void aLoopOfSmallAllReducesOnSharedMemoryAllocatesAlmostNothing(int count, Call kind, boolean windows)
            throws Exception {
        ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
        assertTrue(threads.isThreadAllocatedMemorySupported());
        List<Communicator> comms;
        if (!windows) {
            System.setProperty("panamax.shm.windowBytes", "0");
        }
        try {
            comms = Ranks.Transport.SHM.open(2);
        } finally {
            System.clearProperty("panamax.shm.windowBytes");
        }
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
                        // Sum 1 + 2 = 3 times the index, average 1.5 times, pre-multiplied by 2: 6 times.
                        float times = switch (kind) {
                            case SUM -> {
                                c.allReduce(send, recv, count, DataType.FLOAT32, ReduceOp.SUM);
                                yield 3f;
                            }
                            case AVERAGE -> {
                                c.allReduce(send, recv, count, DataType.FLOAT32, ReduceOp.AVG);
                                yield 1.5f;
                            }
                            case PRE_MULTIPLIED_SUM -> {
                                c.allReducePreMulSum(send, recv, count, DataType.FLOAT32, 2.0);
                                yield 6f;
                            }
                        };
                        int last = count - 1;
                        if (recv.getAtIndex(ValueLayout.JAVA_FLOAT, 0) != times
                                || recv.getAtIndex(ValueLayout.JAVA_FLOAT, last) != times * count) {
                            throw new AssertionError("call " + call + ": " + recv.getAtIndex(ValueLayout.JAVA_FLOAT, 0)
                                    + ", " + recv.getAtIndex(ValueLayout.JAVA_FLOAT, last) + " instead of " + times
                                    + ", " + times * count);
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
                    "rank " + r + " allocated " + bytesPerCall[r] + " bytes per " + kind + " of " + count + " floats");
        }
    }
    /**
     * A ping-pong of small messages, each the first {@code count} floats of a larger buffer (so each call slices it):
     * the executor keeps the slice, the call's name and the request for the next message, and the call path makes no
     * closure.
     */
    @ParameterizedTest(name = "{0} floats")
    @CsvSource({"1", "2", "256"})
    void aPingPongOfSmallMessagesOnSharedMemoryAllocatesAlmostNothing(int count) throws Exception {
        pingPongAllocatesAlmostNothing(Ranks.Transport.SHM, count, WARM_UP_CALLS, CALLS);
    }

    /** The ping-pong above over {@code transport}: {@code warmUpCalls} round trips, then {@code calls} counted. */
    static void pingPongAllocatesAlmostNothing(Ranks.Transport transport, int count, int warmUpCalls, int calls)
            throws Exception {
        ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
        List<Communicator> comms = transport.open(2);
        long[] bytesPerCall = new long[2];
        try {
            RankThreads.run(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment out = arena.allocate(4L * count + 64, 8);
                    MemorySegment in = arena.allocate(4L * count + 64, 8);
                    long before = 0;
                    for (int call = 0; call < warmUpCalls + calls; call++) {
                        if (call == warmUpCalls) {
                            before = threads.getCurrentThreadAllocatedBytes();
                        }
                        if (c.rank() == 0) {
                            out.setAtIndex(ValueLayout.JAVA_FLOAT, 0, call);
                            out.setAtIndex(ValueLayout.JAVA_FLOAT, count - 1, -call);
                            c.send(out, count, DataType.FLOAT32, 1);
                            c.recv(in, count, DataType.FLOAT32, 1);
                            float first = in.getAtIndex(ValueLayout.JAVA_FLOAT, 0);
                            float last = in.getAtIndex(ValueLayout.JAVA_FLOAT, count - 1);
                            if (first != (count == 1 ? -call : call) || last != -call) {
                                throw new AssertionError("call " + call + ": " + first + ", " + last + " came back");
                            }
                        } else {
                            c.recv(in, count, DataType.FLOAT32, 0);
                            c.send(in, count, DataType.FLOAT32, 0);
                        }
                    }
                    bytesPerCall[c.rank()] = (threads.getCurrentThreadAllocatedBytes() - before) / calls;
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
        for (int r = 0; r < 2; r++) {
            assertTrue(bytesPerCall[r] < MAX_BYTES_PER_CALL, "rank " + r + " allocated " + bytesPerCall[r]
                    + " bytes per round trip of " + count + " floats over " + transport);
        }
    }
}
