package dev.panamax.collectives;

import dev.panamax.collectives.plan.Planner;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import javax.management.MBeanServer;
import javax.management.ObjectName;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * All-reduces small enough for the ranks' shared-memory windows (ranks as threads over the shared-memory transport):
 * which communicators run them there, that they mix with the calls that run schedules over the same links, and how
 * a rank that called something else fails. The contract suite checks their results across types, operations, rank
 * counts and counts.
 */
class SharedWindowTest {
    private static final MBeanServer SERVER = ManagementFactory.getPlatformMBeanServer();
    private static final String WINDOW_BYTES = "panamax.shm.windowBytes";

    private static Set<ObjectName> beans() throws Exception {
        return SERVER.queryNames(new ObjectName("dev.panamax:type=Communicator,*"), null);
    }

    /** The {@code WindowBytes} of every communicator bean registered since {@code before}. */
    private static List<Long> windowBytesSince(Set<ObjectName> before) throws Exception {
        Set<ObjectName> added = new HashSet<>(beans());
        added.removeAll(before);
        List<Long> out = new ArrayList<>();
        for (ObjectName n : added) {
            out.add((Long) SERVER.getAttribute(n, "WindowBytes"));
        }
        return out;
    }

    private static void fill(MemorySegment b, float value, int count) {
        for (int i = 0; i < count; i++) {
            b.setAtIndex(ValueLayout.JAVA_FLOAT, i, value + i);
        }
    }

    @Test
    void smallAllReducesRunOverTheWindowsAndMixWithSplitAndAsynchronousCalls() throws Exception {
        Set<ObjectName> before = beans();
        List<Communicator> comms = Ranks.Transport.SHM.open(3);
        try {
            assertEquals(List.of(4096L, 4096L, 4096L), windowBytesSince(before));
            Set<ObjectName> parents = beans();
            // Ranks {0, 2} and {1}: split communicators share the parent's links, not its windows.
            List<Communicator> halves = RankThreads.onEach(comms, c -> c.split(c.rank() % 2, c.rank()));
            try {
                assertEquals(List.of(0L, 0L, 0L), windowBytesSince(parents));
                RankThreads.run(comms, c -> {
                    Communicator half = halves.get(c.rank());
                    MemorySegment buf = c.allocate(64);
                    MemorySegment out = c.allocate(64);
                    for (int it = 0; it < 40; it++) {
                        // Sum over ranks r of (r + it + i): 3 + 3 it + 3 i.
                        fill(buf, c.rank() + it, 16);
                        if (c.rank() == 0 && it % 2 == 0) {
                            c.allReduceAsync(buf, out, 16, DataType.FLOAT32, ReduceOp.SUM).join();
                        } else {
                            c.allReduce(buf, out, 16, DataType.FLOAT32, ReduceOp.SUM);
                        }
                        for (int i = 0; i < 16; i++) {
                            assertEquals(3 + 3 * it + 3 * i, out.getAtIndex(ValueLayout.JAVA_FLOAT, i),
                                    "all-reduce " + it + " [" + i + "]");
                        }
                        fill(buf, c.rank() + it, 16);
                        half.allReduce(buf, 16, DataType.FLOAT32, ReduceOp.SUM);
                        for (int i = 0; i < 16; i++) {
                            float want = c.rank() == 1 ? 1 + it + i : 2 + 2 * it + 2 * i;
                            assertEquals(want, buf.getAtIndex(ValueLayout.JAVA_FLOAT, i), "split " + it + " [" + i
                                    + "]");
                        }
                        // Each rank's input 1 + i, times its scalar rank + 1: (1 + i) * 6.
                        fill(buf, 1, 16);
                        c.allReducePreMulSum(buf, out, 16, DataType.FLOAT32, c.rank() + 1);
                        for (int i = 0; i < 16; i++) {
                            assertEquals(6 * (1 + i), out.getAtIndex(ValueLayout.JAVA_FLOAT, i), "pre-multiplied "
                                    + it + " [" + i + "]");
                        }
                    }
                });
            } finally {
                RankThreads.closeAll(halves);
            }
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    /**
     * {@code plannedAlgorithm} names the windows exactly where an all-reduce runs over them (up to 4096 bytes per
     * rank, auto selection, no call validation, not a split communicator) and otherwise what the planner builds.
     */
    @Test
    void thePlannedAlgorithmNamesTheWindowsWhereTheyRun() {
        List<Communicator> comms = Ranks.Transport.SHM.open(3);
        try {
            Communicator c = comms.get(1);
            DataType f = DataType.FLOAT32;
            assertEquals(Communicator.SHARED_WINDOWS, c.plannedAlgorithm(Collective.ALL_REDUCE, 1, f, 0));
            assertEquals(Communicator.SHARED_WINDOWS, c.plannedAlgorithm(Collective.ALL_REDUCE, 1024, f, 0));
            for (long count : new long[] {0, 1025, 1 << 20}) {
                assertEquals(Planner.scheduleFor(c, Collective.ALL_REDUCE, count, f, 0).algorithm(),
                        c.plannedAlgorithm(Collective.ALL_REDUCE, count, f, 0), count + " floats");
            }
            assertEquals(Planner.scheduleFor(c, Collective.BROADCAST, 10, f, 2).algorithm(),
                    c.plannedAlgorithm(Collective.BROADCAST, 10, f, 2));
            assertEquals(Planner.scheduleFor(c, Collective.BARRIER, 0, f, 0).algorithm(),
                    c.plannedAlgorithm(Collective.BARRIER, 123, DataType.FLOAT64, 7));
            assertThrows(IllegalArgumentException.class, () -> c.plannedAlgorithm(Collective.REDUCE, 1, f, 3));
            assertThrows(IllegalArgumentException.class, () -> c.plannedAlgorithm(Collective.ALL_REDUCE, -1, f, 0));

            RankThreads.run(comms, r -> r.setAlgorithm(Collective.ALL_REDUCE, "ring"));
            assertEquals("ring", c.plannedAlgorithm(Collective.ALL_REDUCE, 1, f, 0));
            RankThreads.run(comms, r -> {
                r.setAlgorithm(Collective.ALL_REDUCE, "auto");
                r.setCallValidation(true);
            });
            assertNotEquals(Communicator.SHARED_WINDOWS, c.plannedAlgorithm(Collective.ALL_REDUCE, 1, f, 0));
            RankThreads.run(comms, r -> r.setCallValidation(false));
            List<Communicator> halves = RankThreads.onEach(comms, r -> r.split(0, r.rank()));
            try {
                assertNotEquals(Communicator.SHARED_WINDOWS, halves.get(1).plannedAlgorithm(Collective.ALL_REDUCE, 1,
                        f, 0));
            } finally {
                RankThreads.closeAll(halves);
            }
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @Test
    void aRankThatCalledAnotherCountFailsTheCallOnEveryRankNamingBothCalls() {
        List<Communicator> comms = Ranks.Transport.SHM.open(3);
        try {
            List<CollectiveException> errors = RankThreads.onEach(comms, c -> {
                MemorySegment b = c.allocate(16);
                return assertThrows(CollectiveException.class,
                        () -> c.allReduce(b, c.rank() == 2 ? 3 : 2, DataType.FLOAT32, ReduceOp.SUM));
            });
            assertTrue(errors.get(0).getMessage().contains("rank 2 called an all-reduce of 12 bytes of float32 (sum) "
                    + "but rank 0 called an all-reduce of 8 bytes of float32 (sum)"), errors.get(0).getMessage());
            assertTrue(errors.get(2).getMessage().contains("rank 0 called an all-reduce of 8 bytes of float32 (sum) "
                    + "but rank 2 called an all-reduce of 12 bytes"), errors.get(2).getMessage());
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @Test
    void windowBytesZeroRunsEveryAllReduceAsASchedule() throws Exception {
        Set<ObjectName> before = beans();
        System.setProperty(WINDOW_BYTES, "0");
        List<Communicator> comms;
        try {
            comms = Ranks.Transport.SHM.open(2);
        } finally {
            System.clearProperty(WINDOW_BYTES);
        }
        try {
            assertEquals(List.of(0L, 0L), windowBytesSince(before));
            RankThreads.run(comms, c -> {
                MemorySegment b = c.allocate(16);
                fill(b, c.rank(), 4);
                c.allReduce(b, 4, DataType.FLOAT32, ReduceOp.SUM);
                for (int i = 0; i < 4; i++) {
                    assertEquals(1 + 2 * i, b.getAtIndex(ValueLayout.JAVA_FLOAT, i));
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    @Test
    void aWindowLargerThanItCanBeFailsConnectingNamingTheKnob() {
        System.setProperty(WINDOW_BYTES, "5000");
        try {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Ranks.Transport.SHM.open(2));
            assertTrue(e.getMessage().contains("PANAMAX_SHM_WINDOW_BYTES: a byte count from 0 to 4096, not '5000'"),
                    e.getMessage());
        } finally {
            System.clearProperty(WINDOW_BYTES);
        }
    }

    @Test
    void otherTransportsHaveNoWindows() throws Exception {
        for (Ranks.Transport t : new Ranks.Transport[] {Ranks.Transport.LOCAL, Ranks.Transport.TCP}) {
            Set<ObjectName> before = beans();
            List<Communicator> comms = t.open(2);
            try {
                assertEquals(List.of(0L, 0L), windowBytesSince(before), t.name());
            } finally {
                RankThreads.closeAll(comms);
            }
        }
    }
}
