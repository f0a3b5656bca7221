package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.concurrent.Doorbell;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import javax.management.MBeanServer;
import javax.management.ObjectName;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A rank that waits long on shared memory sleeps on its inbox's doorbell, and the peer's write wakes it; with
 * {@code PANAMAX_WAIT=spin} it only spins. Checked through the communicator's wait counts (its JMX bean), not
 * through timing.
 */
@EnabledOnOs(OS.LINUX)
class SharedMemoryWaitTest {
    private static final MBeanServer SERVER = ManagementFactory.getPlatformMBeanServer();
    private static final long STRAGGLE_MILLIS = 30;
    /** Calls after the first (which warms up, and whose rank 0 may itself be late while its fill loop compiles). */
    private static final int CALLS = 6;

    private static Set<ObjectName> beans() throws Exception {
        return SERVER.queryNames(new ObjectName("dev.panamax:type=Communicator,*"), null);
    }

    /**
     * What rank 0 waits for while rank 1 straggles: the peer's half of an all-reduce; a message the straggler sends
     * (the slot it publishes must ring); the straggler's receive of a message rank 0 sent from shared memory, which
     * completes only when it has been read in place (the slot it gives back must ring).
     */
    enum Pattern { ALL_REDUCE, RECEIVE_FROM_STRAGGLER, SEND_TO_STRAGGLER }

    @ParameterizedTest
    @EnumSource(Pattern.class)
    void aRankWaitingForAStragglerSleepsUntilTheStragglersWriteWakesIt(Pattern pattern) throws Exception {
        assertTrue(Doorbell.isSupported());
        Set<ObjectName> before = beans();
        List<Communicator> comms = Ranks.Transport.SHM.open(2);
        try {
            Set<ObjectName> mine = new HashSet<>(beans());
            mine.removeAll(before);
            ObjectName rank0 = mine.stream().filter(n -> "0".equals(n.getKeyProperty("rank"))).findFirst()
                    .orElseThrow();
            // 64 Ki floats: a send from the communicator's memory goes by reference, and completes when read.
            int count = 64 * 1024;
            long[] sleepsBefore = new long[2];
            RankThreads.run(comms, c -> {
                MemorySegment buf = c.allocate(count * 4L);
                for (int call = 0; call <= CALLS; call++) {
                    if (call == 1 && c.rank() == 0) {
                        sleepsBefore[0] = (Long) SERVER.getAttribute(rank0, "Sleeps");
                        sleepsBefore[1] = (Long) SERVER.getAttribute(rank0, "SleepsWoken");
                    }
                    for (int i = 0; i < count; i++) {
                        buf.setAtIndex(ValueLayout.JAVA_FLOAT, i, (c.rank() + 1) * (i % 1000 + call));
                    }
                    if (c.rank() == 1 && call > 0) {
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
                        assertEquals(want * (i % 1000 + call), buf.getAtIndex(ValueLayout.JAVA_FLOAT, i),
                                "element " + i);
                    }
                }
            });
            long sleeps = (Long) SERVER.getAttribute(rank0, "Sleeps") - sleepsBefore[0];
            long woken = (Long) SERVER.getAttribute(rank0, "SleepsWoken") - sleepsBefore[1];
            assertTrue(sleeps > 0, "rank 0 never slept while rank 1 straggled");
            // Rank 1's write rang rank 0's doorbell: a sleep per straggled call ended by it, not by the 1 ms timeout.
            // Lost rings show as 0 here; a write may land in the microseconds between two sleeps, or a rank be late
            // on a busy machine, hence only half the calls.
            assertTrue(woken >= CALLS / 2, woken + " of " + sleeps + " sleeps ended by a ring in " + CALLS
                    + " calls");
            assertEquals(0L, SERVER.getAttribute(rank0, "Parks"), "over shared memory a long wait sleeps, never parks");
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @Test
    void withWaitSpinARankWaitingForAStragglerOnlySpins() throws Exception {
        Set<ObjectName> before = beans();
        System.setProperty("panamax.wait", "spin");
        List<Communicator> comms;
        try {
            comms = Ranks.Transport.SHM.open(2);
        } finally {
            System.clearProperty("panamax.wait");
        }
        try {
            Set<ObjectName> mine = new HashSet<>(beans());
            mine.removeAll(before);
            ObjectName rank0 = mine.stream().filter(n -> "0".equals(n.getKeyProperty("rank"))).findFirst()
                    .orElseThrow();
            RankThreads.run(comms, c -> {
                MemorySegment buf = c.allocate(1024 * 4);
                for (int call = 0; call < 3; call++) {
                    for (int i = 0; i < 1024; i++) {
                        buf.setAtIndex(ValueLayout.JAVA_FLOAT, i, c.rank() + call);
                    }
                    if (c.rank() == 1) {
                        Thread.sleep(STRAGGLE_MILLIS);
                    }
                    c.allReduce(buf, 1024, DataType.FLOAT32, ReduceOp.SUM);
                    for (int i = 0; i < 1024; i++) {
                        assertEquals(1f + 2 * call, buf.getAtIndex(ValueLayout.JAVA_FLOAT, i), "element " + i);
                    }
                }
            });
            assertTrue((Long) SERVER.getAttribute(rank0, "Spins") > 0);
            assertEquals(0L, (Long) SERVER.getAttribute(rank0, "Yields") + (Long) SERVER.getAttribute(rank0, "Parks")
                    + (Long) SERVER.getAttribute(rank0, "Sleeps"), "PANAMAX_WAIT=spin never gives up the CPU");
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @Test
    void anUnknownWaitRuleFailsBeforeConnectingNamingTheKnob() {
        System.setProperty("panamax.wait", "doze");
        try {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, Panamax::builder);
            assertTrue(e.getMessage().contains("PANAMAX_WAIT") && e.getMessage().contains("doze"), e.getMessage());
        } finally {
            System.clearProperty("panamax.wait");
        }
    }
}
