package dev.panamax.memory.concurrent;

import dev.panamax.memory.concurrent.TimedBackoffIdleStrategy.Phase;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The phase logic of {@link TimedBackoffIdleStrategy} on a clock the test sets: which phase an idle runs after
 * a given time idle, and when the clock is read. No timing is measured.
 */
class TimedBackoffIdleStrategyTest {
    private static final long START = 1_000_000_000L;

    /** A clock that says what the test sets, and counts its readings. */
    private static final class TestClock {
        long nanos = START;
        int reads;

        long read() {
            reads++;
            return nanos;
        }
    }

    private final TestClock clock = new TestClock();

    private TimedBackoffIdleStrategy strategy(boolean oversubscribed) {
        return new TimedBackoffIdleStrategy(oversubscribed, clock::read);
    }

    /** Idles one clock period: the first of these idles reads the clock. */
    private static void idlePeriod(IdleStrategy s) {
        for (int i = 0; i < TimedBackoffIdleStrategy.CLOCK_EVERY; i++) {
            s.idle();
        }
    }

    /** The phase after idling one period that begins {@code idleNanos} after the wait went idle. */
    private Phase phaseAfter(TimedBackoffIdleStrategy s, long idleNanos) {
        clock.nanos = START + idleNanos;
        idlePeriod(s);
        return s.phase();
    }

    @Test
    void spinsForFiftyMicrosecondsThenYieldsForTwoMillisecondsThenParks() {
        TimedBackoffIdleStrategy s = strategy(false);
        assertEquals(Phase.SPINNING, s.phase());
        assertEquals(Phase.SPINNING, phaseAfter(s, 0));
        assertEquals(Phase.SPINNING, phaseAfter(s, 49_999));
        assertEquals(Phase.YIELDING, phaseAfter(s, 50_000));
        assertEquals(Phase.YIELDING, phaseAfter(s, 2_049_999));
        assertEquals(Phase.PARKING, phaseAfter(s, 2_050_000));
        assertEquals(Phase.PARKING, phaseAfter(s, 60_000_000_000L));
    }

    @Test
    void oversubscribedSpinsTwoMicrosecondsThenYieldsForTwentyMilliseconds() {
        TimedBackoffIdleStrategy s = strategy(true);
        assertEquals(Phase.SPINNING, phaseAfter(s, 0));
        assertEquals(Phase.SPINNING, phaseAfter(s, 1_999));
        assertEquals(Phase.YIELDING, phaseAfter(s, 2_000));
        assertEquals(Phase.YIELDING, phaseAfter(s, 20_001_999));
        assertEquals(Phase.PARKING, phaseAfter(s, 20_002_000));
    }

    @Test
    void theClockIsReadOnceEverySixtyFourIdles() {
        TimedBackoffIdleStrategy s = strategy(false);
        s.idle();
        assertEquals(1, clock.reads);
        clock.nanos = START + 10_000_000;
        for (int i = 1; i < TimedBackoffIdleStrategy.CLOCK_EVERY; i++) {
            s.idle();
        }
        // Far past the spin phase, but the clock has not been read again.
        assertEquals(1, clock.reads);
        assertEquals(Phase.SPINNING, s.phase());
        s.idle();
        assertEquals(2, clock.reads);
        assertEquals(Phase.PARKING, s.phase());
    }

    @Test
    void resetStartsTheIdleTimeAgainFromTheNextIdle() {
        TimedBackoffIdleStrategy s = strategy(false);
        assertEquals(Phase.SPINNING, phaseAfter(s, 0));
        assertEquals(Phase.PARKING, phaseAfter(s, 3_000_000));
        s.reset();
        assertEquals(Phase.SPINNING, s.phase());
        // The first idle after the reset reads the clock and counts from there.
        long resetAt = 3_000_000;
        assertEquals(Phase.SPINNING, phaseAfter(s, resetAt));
        assertEquals(Phase.SPINNING, phaseAfter(s, resetAt + 49_999));
        assertEquals(Phase.YIELDING, phaseAfter(s, resetAt + 50_000));
    }

    @Test
    void idleWithWorkResetsAndIdleWithoutWorkIdles() {
        TimedBackoffIdleStrategy s = strategy(false);
        assertEquals(Phase.SPINNING, phaseAfter(s, 0));
        assertEquals(Phase.YIELDING, phaseAfter(s, 100_000));
        s.idle(2);
        assertEquals(Phase.SPINNING, s.phase());
        int reads = clock.reads;
        clock.nanos = START + 100_000;
        s.idle(0);
        assertEquals(reads + 1, clock.reads, "the first idle after work reads the clock");
        clock.nanos = START + 200_000;
        for (int i = 1; i < TimedBackoffIdleStrategy.CLOCK_EVERY; i++) {
            s.idle(0);
        }
        assertEquals(Phase.SPINNING, s.phase());
        s.idle(0);
        assertEquals(Phase.YIELDING, s.phase(), "100 us after the idle that followed the work");
    }
}
