package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import javax.management.MBeanServer;
import javax.management.ObjectName;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A rank that waits long for a straggling peer sleeps on its links' wake signal, and what the peer does wakes it:
 * the check shared by the transports that have a signal (shared memory, RDMA). Read through the communicator's
 * wait counts (its JMX bean), not through timing.
 */
final class StragglerWaits {
    private static final MBeanServer SERVER = ManagementFactory.getPlatformMBeanServer();
    private static final long STRAGGLE_MILLIS = 30;
    /** Calls after the first (which warms up, and whose rank 0 may itself be late while its fill loop compiles). */
    private static final int CALLS = 6;

    private StragglerWaits() {
    }

    static Set<ObjectName> beans() throws Exception {
        return SERVER.queryNames(new ObjectName("dev.panamax:type=Communicator,*"), null);
    }

    /**
     * Reads rank 0's sleep counts; with {@code count}, adds the call since the last read to {@code calls}: [0] when
     * it slept, [1] when a sleep of it was woken.
     */
    private static void countCall(ObjectName rank0, long[] before, int[] calls, boolean count) throws Exception {
        long sleeps = (Long) SERVER.getAttribute(rank0, "Sleeps");
        long woken = (Long) SERVER.getAttribute(rank0, "SleepsWoken");
        if (count && sleeps > before[0]) {
            calls[0]++;
            if (woken > before[1]) {
                calls[1]++;
            }
        }
        before[0] = sleeps;
        before[1] = woken;
    }

    /**
     * What rank 0 waits for while rank 1 straggles: the peer's half of an all-reduce; a message the straggler sends
     * (the slot it publishes must ring); the straggler's receive of a message rank 0 sent from shared memory, which
     * completes only when it has been read in place (the slot it gives back must ring).
     */
    enum Pattern { ALL_REDUCE, RECEIVE_FROM_STRAGGLER, SEND_TO_STRAGGLER }

    /**
     * Rank 1 straggles {@value #STRAGGLE_MILLIS} ms before each of {@value #CALLS} calls of {@code pattern} over
     * {@code transport}; rank 0 must have slept through its waits and been woken by what rank 1 did (not by the
     * sleep's timeout) in at least half of the calls in which it slept, and never parked. Every element is checked.
     */
    static void check(Ranks.Transport transport, Pattern pattern) throws Exception {
        Set<ObjectName> before = beans();
        List<Communicator> comms = transport.open(2);
        try {
            Set<ObjectName> mine = new HashSet<>(beans());
            mine.removeAll(before);
            ObjectName rank0 = mine.stream().filter(n -> "0".equals(n.getKeyProperty("rank"))).findFirst()
                    .orElseThrow();
            // 64 Ki floats: a send from the communicator's memory goes by reference, and completes when read.
            int count = 64 * 1024;
            // rank 0's counts before the current call; then the calls in which it slept, and those in which a
            // sleep was woken
            long[] counts = new long[2];
            int[] calls = new int[2];
            // Rank 1 starts its straggle only when rank 0 is about to call: a slow (emulated) CPU can make rank 0
            // the late one otherwise, and a rank 0 that arrives after the straggle never waits long enough to sleep.
            Semaphore rank0Calling = new Semaphore(0);
            RankThreads.run(comms, c -> {
                MemorySegment buf = c.allocate(count * 4L);
                for (int call = 0; call <= CALLS; call++) {
                    if (call >= 1 && c.rank() == 0) {
                        countCall(rank0, counts, calls, call > 1);
                    }
                    for (int i = 0; i < count; i++) {
                        buf.setAtIndex(ValueLayout.JAVA_FLOAT, i, (c.rank() + 1) * (i % 1000 + call));
                    }
                    if (c.rank() == 0) {
                        rank0Calling.release();
                    } else if (!rank0Calling.tryAcquire(30, TimeUnit.SECONDS)) {
                        throw new AssertionError("rank 0 never reached call " + call);
                    } else if (call > 0) {
                        Thread.sleep(STRAGGLE_MILLIS); // past rank 0's spin and yields: it sleeps
                    }
                    float want = switch (pattern) {
                        case ALL_REDUCE -> {
                            c.allReduce(buf, count, DataType.FLOAT32, ReduceOp.SUM);
                            yield 3f;
                        }
                        case RECEIVE_FROM_STRAGGLER -> {
                            if (c.rank() == 0) {
                                c.recv(buf, count, DataType.FLOAT32, 1);
                            } else {
                                c.send(buf, count, DataType.FLOAT32, 0);
                            }
                            yield 2f;
                        }
                        case SEND_TO_STRAGGLER -> {
                            if (c.rank() == 0) {
                                c.send(buf, count, DataType.FLOAT32, 1);
                            } else {
                                c.recv(buf, count, DataType.FLOAT32, 0);
                            }
                            yield 1f;
                        }
                    };
                    for (int i = 0; i < count; i++) {
                        float got = buf.getAtIndex(ValueLayout.JAVA_FLOAT, i);
                        if (got != want * (i % 1000 + call)) { // no message built per element: slow in the VM
                            assertEquals(want * (i % 1000 + call), got, "element " + i + " of call " + call);
                        }
                    }
                    if (call == CALLS && c.rank() == 0) {
                        countCall(rank0, counts, calls, true);
                    }
                }
            });
            assertTrue(calls[0] > 0, "rank 0 never slept while rank 1 straggled");
            // Rank 1's write woke rank 0 (shared memory: it rang the doorbell; RDMA: its completion signalled the
            // channel): a sleep ended by it, not by the 1 ms timeout. Lost rings show as 0 here. A write may land
            // in the microseconds between two sleeps, hence half the calls; and only the calls in which rank 0
            // slept count: on a slow machine (the RDMA tests' emulated VM) a descheduled rank 0 may miss a sleep.
            assertTrue(calls[1] * 2 >= calls[0], "in " + calls[1] + " of the " + calls[0] + " calls (of " + CALLS
                    + ") in which rank 0 slept, a sleep ended by rank 1's message rather than the timeout");
            assertEquals(0L, SERVER.getAttribute(rank0, "Parks"), "a long wait sleeps, never parks");
        } finally {
            RankThreads.closeAll(comms);
        }
    }
}
