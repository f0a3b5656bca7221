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

    @ParameterizedTest
    @EnumSource(StragglerWaits.Pattern.class)
    void aRankWaitingForAStragglerSleepsUntilTheStragglersWriteWakesIt(StragglerWaits.Pattern pattern)
            throws Exception {
        assertTrue(Doorbell.isSupported());
        StragglerWaits.check(Ranks.Transport.SHM, pattern);
    }

    @Test
    void withWaitSpinARankWaitingForAStragglerOnlySpins() throws Exception {
        Set<ObjectName> before = StragglerWaits.beans();
        System.setProperty("panamax.wait", "spin");
        List<Communicator> comms;
        try {
            comms = Ranks.Transport.SHM.open(2);
        } finally {
            System.clearProperty("panamax.wait");
        }
        try {
            Set<ObjectName> mine = new HashSet<>(StragglerWaits.beans());
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
