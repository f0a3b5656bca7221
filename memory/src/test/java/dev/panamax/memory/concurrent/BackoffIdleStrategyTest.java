package dev.panamax.memory.concurrent;

import dev.panamax.memory.concurrent.BackoffIdleStrategy.Phase;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

class BackoffIdleStrategyTest {

    @Test
    void goesThroughSpinSpinWaitYieldThenParksWithADoublingPeriodUpToTheCap() {
        BackoffIdleStrategy s = new BackoffIdleStrategy(2, 3, 1, 1_000, 5_000);
        assertEquals(Phase.SPINNING, s.phase());
        s.idle(0);
        assertEquals(Phase.SPINNING, s.phase());
        s.idle(0);
        assertEquals(Phase.SPIN_WAITING, s.phase());
        s.idle(0);
        s.idle(0);
        assertEquals(Phase.SPIN_WAITING, s.phase());
        s.idle(0);
        assertEquals(Phase.YIELDING, s.phase());
        s.idle(0);
        assertEquals(Phase.PARKING, s.phase());
        assertEquals(1_000, s.parkNanos());
        s.idle(0);
        assertEquals(2_000, s.parkNanos());
        s.idle(0);
        assertEquals(4_000, s.parkNanos());
        s.idle(0);
        assertEquals(5_000, s.parkNanos());
        s.idle(0);
        assertEquals(5_000, s.parkNanos());
        assertEquals(Phase.PARKING, s.phase());
    }

    @Test
    void workOrResetStartsOver() {
        BackoffIdleStrategy s = new BackoffIdleStrategy(1, 1, 1, 10, 100);
        for (int i = 0; i < 6; i++) s.idle(0);
        assertEquals(Phase.PARKING, s.phase());
        s.idle(3);
        assertEquals(Phase.SPINNING, s.phase());
        assertEquals(10, s.parkNanos());
        for (int i = 0; i < 6; i++) s.idle(0);
        s.reset();
        assertEquals(Phase.SPINNING, s.phase());
    }

    @Test
    void emptyPhasesAreSkipped() {
        BackoffIdleStrategy s = new BackoffIdleStrategy(0, 0, 0, 10, 100);
        assertEquals(Phase.PARKING, s.phase());
        BackoffIdleStrategy t = new BackoffIdleStrategy(1, 0, 2, 10, 100);
        t.idle(0);
        assertEquals(Phase.YIELDING, t.phase());
    }

    @Test
    void rejectsBadParameters() {
        assertThrows(IllegalArgumentException.class, () -> new BackoffIdleStrategy(-1, 0, 0, 1, 1));
        assertThrows(IllegalArgumentException.class, () -> new BackoffIdleStrategy(0, 0, 0, 0, 1));
        assertThrows(IllegalArgumentException.class, () -> new BackoffIdleStrategy(0, 0, 0, 10, 5));
    }

    @Test
    void plainIdleIsAnIdleWithoutWork() {
        BackoffIdleStrategy s = new BackoffIdleStrategy(1, 1, 1, 10, 100);
        s.idle();
        assertEquals(Phase.SPIN_WAITING, s.phase());
        s.idle();
        s.idle();
        assertEquals(Phase.PARKING, s.phase());
    }

    @Test
    void factories() {
        IdleStrategy b = IdleStrategies.backoff();
        assertEquals(BackoffIdleStrategy.class, b.getClass());
        assertEquals(Phase.SPINNING, ((BackoffIdleStrategy) b).phase());
        IdleStrategy custom = IdleStrategies.backoff(0, 0, 1, 10, 100);
        assertEquals(Phase.YIELDING, ((BackoffIdleStrategy) custom).phase());
        assertSame(IdleStrategies.busySpin(), IdleStrategies.busySpin());
        IdleStrategies.busySpin().idle(0); // returns: a spin-wait hint only
        IdleStrategies.busySpin().idle();
        IdleStrategies.busySpin().reset();
        assertEquals(AdaptiveBackoffIdleStrategy.class, IdleStrategies.adaptiveBackoff(false).getClass());
        assertEquals(AdaptiveBackoffIdleStrategy.Phase.SPINNING, IdleStrategies.adaptiveBackoff(true).phase());
    }
}
