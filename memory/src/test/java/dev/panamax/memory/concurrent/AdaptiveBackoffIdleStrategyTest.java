package dev.panamax.memory.concurrent;

import dev.panamax.memory.concurrent.AdaptiveBackoffIdleStrategy.Phase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The decisions of {@link AdaptiveBackoffIdleStrategy} on a clock and a switch count the test sets: which phase
 * an idle runs after a given time, when a preempted spin stops spinning and for how long, and what is counted.
 * No timing is measured.
 */
class AdaptiveBackoffIdleStrategyTest {
    private static final long START = 1_000_000_000L;
    private static final long SPIN = AdaptiveBackoffIdleStrategy.SPIN_NANOS;
    private static final long PENALTY = AdaptiveBackoffIdleStrategy.MIN_PENALTY_NANOS;
    private static final long PENALIZED_SPIN = AdaptiveBackoffIdleStrategy.PENALIZED_SPIN_NANOS;

    private long now = START;
    private int clockReads;
    /** The thread's involuntary switch count as the strategy reads it; -1: unavailable. */
    private long switches;
    private int switchReads;
    /** Whether the waits of {@link #waitFrom} and {@link #waitEndingInTheYields} allow a longer spin. */
    private boolean longer;
    /** How far the clock moves on each read: 0 stops it, so that every yield seems to come straight back. */
    private long nanosPerClockRead;

    private AdaptiveBackoffIdleStrategy strategy(boolean oversubscribed) {
        return new AdaptiveBackoffIdleStrategy(oversubscribed, () -> {
            clockReads++;
            long t = now;
            now += nanosPerClockRead;
            return t;
        }, () -> {
            switchReads++;
            return switches;
        });
    }

    /** Idles one clock period at {@code at} nanoseconds after START; returns the phase decided. */
    private Phase idleAt(AdaptiveBackoffIdleStrategy s, long at) {
        now = START + at;
        for (int i = 0; i < AdaptiveBackoffIdleStrategy.CLOCK_EVERY; i++) {
            s.idle();
        }
        return s.phase();
    }

    /**
     * One wait that begins at {@code at} and idles until {@code at + length}; returns whether it could spin in full
     * (not only the short spin of a penalty).
     */
    private boolean waitFrom(AdaptiveBackoffIdleStrategy s, long at, long length, boolean preempted) {
        s.reset();
        s.allowLongerSpin(longer);
        idleAt(s, at);
        boolean spun = s.phase() == Phase.SPINNING && s.counts().spinNanos() > PENALIZED_SPIN;
        if (length >= AdaptiveBackoffIdleStrategy.CHECKED_SPIN_NANOS) {
            idleAt(s, at + AdaptiveBackoffIdleStrategy.CHECKED_SPIN_NANOS);
        }
        if (preempted) {
            switches++;
        }
        idleAt(s, at + length);
        s.waitEnded();
        return spun;
    }

    @Test
    void spinsFiftyMicrosecondsThenYieldsForTwoMillisecondsThenParks() {
        AdaptiveBackoffIdleStrategy s = strategy(false);
        assertEquals(Phase.SPINNING, idleAt(s, 0));
        assertEquals(Phase.SPINNING, idleAt(s, SPIN - 1));
        assertEquals(Phase.YIELDING, idleAt(s, SPIN));
        assertEquals(Phase.YIELDING, idleAt(s, SPIN + AdaptiveBackoffIdleStrategy.YIELD_NANOS - 1));
        assertEquals(Phase.PARKING, idleAt(s, SPIN + AdaptiveBackoffIdleStrategy.YIELD_NANOS));
    }

    @Test
    void oversubscribedNeverSpinsAndYieldsTwentyMillisecondsBeforeParking() {
        AdaptiveBackoffIdleStrategy s = strategy(true);
        for (int wait = 0; wait < 3; wait++) {
            s.reset();
            long at = wait * 100_000_000L;
            assertEquals(Phase.YIELDING, idleAt(s, at));
            assertEquals(Phase.YIELDING, idleAt(s, at + AdaptiveBackoffIdleStrategy.OVERSUBSCRIBED_YIELD_NANOS - 1));
            assertEquals(Phase.PARKING, idleAt(s, at + AdaptiveBackoffIdleStrategy.OVERSUBSCRIBED_YIELD_NANOS));
            s.waitEnded();
        }
        assertEquals(0, s.counts().spins());
        assertEquals(0, switchReads, "nothing to decide, so no system call");
    }

    @Test
    void shortSpinsMakeNoSystemCall() {
        AdaptiveBackoffIdleStrategy s = strategy(false);
        for (int wait = 0; wait < 100; wait++) {
            waitFrom(s, wait * 10_000L, AdaptiveBackoffIdleStrategy.CHECKED_SPIN_NANOS - 1, false);
        }
        assertEquals(0, switchReads);
        assertEquals(100, s.counts().waits());
        assertEquals(100, s.counts().servedSpinning());
    }

    @Test
    void aPreemptedSpinLeavesOnlyTheShortSpinForThePenaltyThenTheFullSpinResumes() {
        AdaptiveBackoffIdleStrategy s = strategy(false);
        assertEquals(true, waitFrom(s, 0, 20_000, true));
        assertEquals(1, switchReads, "read at the mark; the wait ended while spinning, so not as it ended");
        assertEquals(0, s.counts().preemptedSpins(), "not judged yet");
        long found = 21_000;
        assertEquals(false, waitFrom(s, found, 20_000, false), "judged at its first idle: the short spin only");
        assertEquals(2, switchReads);
        assertEquals(1, s.counts().preemptedSpins());
        assertEquals(false, waitFrom(s, found + PENALTY - 1, 1_000, false));
        assertEquals(true, waitFrom(s, found + PENALTY, 1_000, false), "the penalty is over");
        assertEquals(3, s.counts().servedSpinning(), "all but the 20 us wait in the penalty ended while spinning");
        assertEquals(2, switchReads, "the waits in the penalty read no switch count");
    }

    @Test
    void aWaitInThePenaltySpinsBrieflyThenYieldsWithoutReadingTheSwitchCount() {
        longer = true;
        AdaptiveBackoffIdleStrategy s = strategy(false);
        assertEquals(true, waitFrom(s, 0, 20_000, true));
        s.reset();
        s.allowLongerSpin(true);
        assertEquals(Phase.SPINNING, idleAt(s, 30_000), "a peer that is running arrives within the short spin");
        assertEquals(PENALIZED_SPIN, s.counts().spinNanos(), "the spin before was preempted");
        int reads = switchReads;
        assertEquals(Phase.SPINNING, idleAt(s, 30_000 + PENALIZED_SPIN - 1));
        assertEquals(Phase.YIELDING, idleAt(s, 30_000 + PENALIZED_SPIN));
        idleAt(s, 130_000);
        s.waitEnded();
        assertEquals(reads, switchReads, "no switch count read (outside a penalty, one when the spin gives way)");
        assertTrue(PENALIZED_SPIN < AdaptiveBackoffIdleStrategy.CHECKED_SPIN_NANOS, "the short spin is never checked");
    }

    @Test
    void aMoveOffASharedCpuEndsThePenaltyButNotItsDoubling() {
        AdaptiveBackoffIdleStrategy s = strategy(false);
        assertEquals(true, waitFrom(s, 0, 20_000, true));
        assertEquals(false, waitFrom(s, 21_000, 1_000, false), "in the penalty");
        assertTrue(s.inPenalty(START + 22_000));
        now = START + 30_000;
        s.movedOffSharedCpu();
        assertEquals(false, s.inPenalty(START + 30_000));
        assertEquals(1, s.counts().cpuMoves());
        assertEquals(true, waitFrom(s, 30_000, 20_000, true), "spins again at once");
        long found = 51_000;
        assertEquals(false, waitFrom(s, found, 1, false));
        assertEquals(false, waitFrom(s, found + 2 * PENALTY - 1, 1, false), "the next penalty is twice as long");
        assertEquals(true, waitFrom(s, found + 2 * PENALTY, 1, false));
        assertEquals(false, strategy(true).inPenalty(START), "oversubscribed: never spins, but no penalty either");
    }

    @Test
    void thePenaltyDoublesWhileSpinsArePreemptedAndResetsAfterACleanOne() {
        AdaptiveBackoffIdleStrategy s = strategy(false);
        long at = 0;
        long expected = PENALTY;
        for (int i = 0; i < 12; i++) {
            assertEquals(true, waitFrom(s, at, 20_000, true));
            long found = at + 21_000;
            assertEquals(false, waitFrom(s, found, 1, false), "penalty " + i);
            assertEquals(false, waitFrom(s, found + expected - 1, 1, false), "penalty " + i);
            at = found + expected;
            expected = Math.min(AdaptiveBackoffIdleStrategy.MAX_PENALTY_NANOS, 2 * expected);
        }
        assertEquals(AdaptiveBackoffIdleStrategy.MAX_PENALTY_NANOS, expected);
        assertEquals(true, waitFrom(s, at, 20_000, false), "a clean spin");
        at += 21_000;
        assertEquals(true, waitFrom(s, at, 20_000, true), "found clean at this wait's first idle");
        long found = at + 21_000;
        assertEquals(false, waitFrom(s, found, 1, false));
        assertEquals(false, waitFrom(s, found + PENALTY - 1, 1, false));
        assertEquals(true, waitFrom(s, found + PENALTY, 1, false), "back to the shortest penalty");
    }

    @Test
    void aSpinPreemptedBeforeTheMarkOrAfterItsEndIsNotBlamed() {
        AdaptiveBackoffIdleStrategy s = strategy(false);
        switches = 5;
        s.reset();
        idleAt(s, 0);
        switches++; // before the mark: the spin was still short
        idleAt(s, AdaptiveBackoffIdleStrategy.CHECKED_SPIN_NANOS);
        idleAt(s, SPIN);  // the spin ends here, no switch since the mark
        switches++;       // while yielding: a yield that let someone run is not a preempted spin
        idleAt(s, SPIN + 100_000);
        s.waitEnded();
        assertEquals(0, s.counts().preemptedSpins());
        assertEquals(true, waitFrom(s, 1_000_000, 1_000, false));
    }

    @Test
    void theEndOfAWaitReadsNeitherTheSwitchCountNorTheClockAndASwitchBeforeTheNextWaitCounts() {
        AdaptiveBackoffIdleStrategy s = strategy(false);
        s.reset();
        idleAt(s, 0);
        idleAt(s, AdaptiveBackoffIdleStrategy.CHECKED_SPIN_NANOS);
        idleAt(s, 20_000);
        int switchesRead = switchReads;
        int clockRead = clockReads;
        s.waitEnded(); // served while spinning: the path from the peer's write to this rank's next step
        assertEquals(switchesRead, switchReads, "no system call as the wait ends");
        assertEquals(clockRead, clockReads, "no clock read either");
        switches++; // preempted while it ran between the two waits: someone else wanted the CPU too
        s.reset();
        assertEquals(Phase.SPINNING, idleAt(s, 30_000));
        assertEquals(switchesRead + 1, switchReads, "read at the next wait's first idle");
        assertEquals(1, s.counts().preemptedSpins());
        assertEquals(PENALIZED_SPIN, s.counts().spinNanos());
        assertEquals(Phase.YIELDING, idleAt(s, 30_000 + PENALIZED_SPIN));
    }

    @Test
    void anUnavailableSwitchCountNeverStopsTheSpinning() {
        AdaptiveBackoffIdleStrategy s = strategy(false);
        switches = -1;
        for (int wait = 0; wait < 5; wait++) {
            assertEquals(true, waitFrom(s, wait * 1_000_000L, 100_000, false));
        }
        assertEquals(0, s.counts().preemptedSpins());
        assertEquals(5, s.counts().waits());
        assertEquals(0, s.counts().servedSpinning(), "every wait outlasted its spin");
    }

    @Test
    void theClockIsReadOnceEveryFewIdles() {
        AdaptiveBackoffIdleStrategy s = strategy(false);
        int before = clockReads;
        s.idle();
        assertEquals(before + 1, clockReads);
        now = START + 10_000_000;
        for (int i = 1; i < AdaptiveBackoffIdleStrategy.CLOCK_EVERY; i++) {
            s.idle();
        }
        // Far past the spin, but the clock has not been read again.
        assertEquals(before + 1, clockReads);
        assertEquals(Phase.SPINNING, s.phase());
        s.idle();
        assertEquals(before + 2, clockReads);
        assertEquals(Phase.PARKING, s.phase());
    }

    @Test
    void withoutWaitEndedEveryResetStillChoosesTheSpinAfresh() {
        AdaptiveBackoffIdleStrategy s = strategy(false);
        s.reset();
        idleAt(s, 0);
        idleAt(s, AdaptiveBackoffIdleStrategy.CHECKED_SPIN_NANOS);
        switches++;
        idleAt(s, 20_000);
        s.reset(); // progress, or the next wait of a caller that keeps no counts
        idleAt(s, 30_000);
        assertEquals(PENALIZED_SPIN, s.counts().spinNanos(), "the preempted spin began a penalty");
        assertEquals(Phase.YIELDING, idleAt(s, 30_000 + PENALIZED_SPIN));
        s.reset();
        idleAt(s, 30_000 + PENALTY);
        assertEquals(SPIN, s.counts().spinNanos(), "and it ended");
    }

    @Test
    void progressRestartsTheSpinWithinAWait() {
        AdaptiveBackoffIdleStrategy s = strategy(false);
        switches = -1; // unknown: the spin stays SPIN (learning is tested below)
        assertEquals(Phase.SPINNING, idleAt(s, 0));
        assertEquals(Phase.YIELDING, idleAt(s, SPIN));
        s.idle(1);
        assertEquals(Phase.SPINNING, s.phase());
        assertEquals(Phase.SPINNING, idleAt(s, 2 * SPIN));
        assertEquals(Phase.YIELDING, idleAt(s, 3 * SPIN));
        s.waitEnded();
        assertEquals(1, s.counts().waits());
        assertEquals(0, s.counts().servedSpinning());
    }

    @Test
    void spinNeverLeavesTheSpinAndCountsTheWaitAsServedSpinning() {
        AdaptiveBackoffIdleStrategy s = strategy(false);
        s.reset();
        clockReads = 0;
        now = START + 10 * (SPIN + AdaptiveBackoffIdleStrategy.YIELD_NANOS); // long past every phase
        for (int i = 0; i < 100; i++) {
            s.spin();
        }
        assertEquals(Phase.SPINNING, s.phase());
        s.waitEnded();
        assertEquals(1, s.counts().waits());
        assertEquals(1, s.counts().servedSpinning());
        assertEquals(100, s.counts().spins());
        assertEquals(0, s.counts().yields() + s.counts().parks() + s.counts().sleeps());
        assertEquals(0, clockReads, "a spin-only wait reads no clock");
    }

    /**
     * One wait from {@code at} that spins out its spin and ends while yielding at {@code at + length}; with
     * {@code switched}, a yield let another thread run.
     */
    private void waitEndingInTheYields(AdaptiveBackoffIdleStrategy s, long at, long length, boolean switched) {
        s.reset();
        s.allowLongerSpin(longer);
        long spin = longer ? s.learnedSpinNanos() : SPIN;
        assertEquals(Phase.SPINNING, idleAt(s, at));
        idleAt(s, at + AdaptiveBackoffIdleStrategy.CHECKED_SPIN_NANOS);
        assertEquals(Phase.YIELDING, idleAt(s, at + Math.min(length, spin)), "the spin is over");
        if (switched) {
            switches++;
        }
        now = START + at + length;
        s.waitEnded();
    }

    @Test
    void aWaitThatYieldedOnAFreeCpuLengthensTheSpinOfLaterWaits() {
        longer = true;
        AdaptiveBackoffIdleStrategy s = strategy(false);
        waitEndingInTheYields(s, 0, 120_000, false);
        long learned = (SPIN + 180_000 + 1) / 2;
        assertEquals(learned, s.learnedSpinNanos(), "halfway to 1.5 times the wait");
        s.reset();
        s.allowLongerSpin(true);
        assertEquals(Phase.SPINNING, idleAt(s, 1_000_000));
        assertEquals(Phase.SPINNING, idleAt(s, 1_000_000 + learned - 1));
        assertEquals(Phase.YIELDING, idleAt(s, 1_000_000 + learned));
        s.waitEnded();
        for (int wait = 0; wait < 20; wait++) {
            waitFrom(s, 2_000_000 + wait * 1_000_000L, 120_000, false);
        }
        assertTrue(s.learnedSpinNanos() > 120_000, "waits of 120 us end while spinning: "
                + s.learnedSpinNanos());
        assertEquals(20, s.counts().servedSpinning());
    }

    /** Waits of the longest learnable length, each ending in the yields, until the spin is that long. */
    private void learnTheLongestSpin(AdaptiveBackoffIdleStrategy s) {
        for (int wait = 0; wait < 30; wait++) {
            waitEndingInTheYields(s, wait * 10_000_000L, AdaptiveBackoffIdleStrategy.MAX_SPIN_NANOS, false);
        }
        assertEquals(AdaptiveBackoffIdleStrategy.MAX_SPIN_NANOS, s.learnedSpinNanos());
    }

    @Test
    void theLearnedSpinStopsAtItsLongestAndWaitsLongerThanThatTeachNothing() {
        longer = true;
        AdaptiveBackoffIdleStrategy s = strategy(false);
        learnTheLongestSpin(s);
        waitEndingInTheYields(s, 400_000_000L, AdaptiveBackoffIdleStrategy.MAX_SPIN_NANOS + 1, false);
        assertEquals(SPIN, s.learnedSpinNanos(), "a wait no spin may cover");
    }

    @Test
    void aYieldThatLetAnotherThreadRunTeachesNoLongerSpinAndUndoesOne() {
        longer = true;
        AdaptiveBackoffIdleStrategy s = strategy(false);
        waitEndingInTheYields(s, 0, 100_000, true);
        assertEquals(SPIN, s.learnedSpinNanos(), "the CPU is shared: the yield was not wasted");
        waitEndingInTheYields(s, 1_000_000, 100_000, false);
        assertTrue(s.learnedSpinNanos() > SPIN);
        waitEndingInTheYields(s, 2_000_000, 200_000, true);
        assertEquals(SPIN, s.learnedSpinNanos());
    }

    @Test
    void aPreemptedSpinOrAWaitThatReachedTheParksPutsTheSpinBack() {
        longer = true;
        AdaptiveBackoffIdleStrategy s = strategy(false);
        waitEndingInTheYields(s, 0, 200_000, false);
        assertTrue(s.learnedSpinNanos() > SPIN);
        waitFrom(s, 1_000_000, 20_000, true);
        s.reset();
        s.allowLongerSpin(true);
        idleAt(s, 1_021_000);
        assertEquals(1, s.counts().preemptedSpins());
        s.waitEnded();
        s.reset();
        s.allowLongerSpin(true);
        idleAt(s, 1_021_000 + PENALTY);
        assertEquals(SPIN, s.counts().spinNanos(), "back to the shortest spin after the penalty");
        s.waitEnded();
        long at = 2 * PENALTY;
        waitEndingInTheYields(s, at, 200_000, false);
        long learned = s.learnedSpinNanos();
        assertTrue(learned > SPIN);
        s.reset();
        s.allowLongerSpin(true);
        idleAt(s, at + 1_000_000);
        idleAt(s, at + 1_000_000 + AdaptiveBackoffIdleStrategy.CHECKED_SPIN_NANOS);
        assertEquals(Phase.PARKING, idleAt(s, at + 1_000_000 + learned + AdaptiveBackoffIdleStrategy.YIELD_NANOS));
        s.waitEnded();
        s.reset();
        s.allowLongerSpin(true);
        idleAt(s, at + 10_000_000);
        assertEquals(SPIN, s.learnedSpinNanos(), "a wait that parked");
    }

    @Test
    void waitsServedSpinningPullTheSpinBackTowardsTwiceTheirLength() {
        longer = true;
        AdaptiveBackoffIdleStrategy s = strategy(false);
        learnTheLongestSpin(s);
        long at = 1_000_000_000L;
        for (int wait = 0; wait < 200; wait++) {
            waitFrom(s, at + wait * 1_000_000L, 1_000, false);
        }
        assertTrue(s.learnedSpinNanos() <= SPIN + 100, "short waits bring it down: " + s.learnedSpinNanos());
        assertTrue(s.learnedSpinNanos() >= SPIN, "never below " + SPIN);
    }

    @Test
    void waitsThatDoNotAllowALongerSpinNeitherGetOneNorTeachOne() {
        AdaptiveBackoffIdleStrategy s = strategy(false);
        longer = true;
        waitEndingInTheYields(s, 0, 200_000, false);
        long learned = s.learnedSpinNanos();
        assertTrue(learned > SPIN);
        longer = false;
        int reads = switchReads;
        waitEndingInTheYields(s, 1_000_000, 400_000, false);
        assertEquals(reads + 2, switchReads, "the mark and the spin's end; nothing read for learning");
        assertEquals(learned, s.learnedSpinNanos(), "taught nothing");
        waitFrom(s, 2_000_000, 1_000, false);
        assertEquals(learned, s.learnedSpinNanos(), "a short wait that does not allow it pulls nothing back");
        longer = true;
        s.reset();
        s.allowLongerSpin(true);
        assertEquals(Phase.SPINNING, idleAt(s, 3_000_000));
        assertEquals(Phase.SPINNING, idleAt(s, 3_000_000 + learned - 1), "a wait that allows it spins longer");
        s.waitEnded();
        s.reset();
        assertEquals(Phase.SPINNING, idleAt(s, 4_000_000));
        assertEquals(Phase.YIELDING, idleAt(s, 4_000_000 + SPIN), "waitEnded withdrew the permission");
    }

    @Test
    void oversubscribedLearnsNoSpin() {
        longer = true;
        AdaptiveBackoffIdleStrategy s = strategy(true);
        for (int wait = 0; wait < 5; wait++) {
            s.reset();
            s.allowLongerSpin(true);
            idleAt(s, wait * 1_000_000L);
            idleAt(s, wait * 1_000_000L + 100_000);
            s.waitEnded();
        }
        s.reset();
        assertEquals(Phase.YIELDING, idleAt(s, 10_000_000));
        assertEquals(0, s.counts().spinNanos());
        assertEquals(SPIN, s.learnedSpinNanos());
    }

    @Test
    @EnabledOnOs(OS.LINUX)
    void withADoorbellTheParkingPhaseSleepsOnItArmingItFirstAndAnEndedWaitDisarmsIt() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment word = arena.allocate(Doorbell.BYTES, 4);
            Doorbell bell = new Doorbell(word);
            Doorbell writer = new Doorbell(word);
            AdaptiveBackoffIdleStrategy s = strategy(false);
            s.reset();
            long parkAt = SPIN + AdaptiveBackoffIdleStrategy.YIELD_NANOS;
            now = START;
            s.idle(bell);
            now = START + SPIN;
            for (int i = 0; i < AdaptiveBackoffIdleStrategy.CLOCK_EVERY; i++) {
                s.idle(bell);
            }
            assertFalse(bell.isArmed(), "spinning and yielding leave the bell alone");
            now = START + parkAt;
            for (int i = 0; i < AdaptiveBackoffIdleStrategy.CLOCK_EVERY - 1; i++) {
                s.idle(bell); // reaches the clock read that enters the parking phase
            }
            s.idle(bell);
            assertTrue(bell.isArmed(), "the first idle of the parking phase arms");
            assertEquals(1, word.get(ValueLayout.JAVA_INT, 0));
            assertEquals(0, s.counts().sleeps());
            writer.ring(); // the write the caller waits for, between its poll and the next idle
            assertEquals(0, word.get(ValueLayout.JAVA_INT, 0), "the ring cleared the word");
            s.idle(bell); // returns at once: the word no longer holds 1
            assertEquals(1, s.counts().sleeps());
            assertEquals(1, s.counts().wokenSleeps(), "the ring ended it");
            assertEquals(0, s.counts().parks(), "with a doorbell the parking phase never parks");
            assertFalse(bell.isArmed());
            s.idle(bell);
            assertTrue(bell.isArmed(), "still waiting: arms again");
            s.waitEnded();
            assertFalse(bell.isArmed());
            assertEquals(0, word.get(ValueLayout.JAVA_INT, 0), "an ended wait disarms: writers stop waking it");
        }
    }

    /** A wake signal that counts its arms and sleeps; a sleep returns at once, as if rung. */
    private static final class CountingSignal implements WakeSignal {
        int arms;
        int sleeps;
        boolean armed;

        @Override
        public void arm() {
            arms++;
            armed = true;
        }

        @Override
        public boolean isArmed() {
            return armed;
        }

        @Override
        public void disarm() {
            armed = false;
        }

        @Override
        public boolean sleep(long timeoutNanos) {
            assertTrue(armed, "sleeps only armed");
            sleeps++;
            armed = false;
            return true;
        }
    }

    /** Yields of an oversubscribed wait, {@code unswitched} of them finding the CPU free (the clock stands still). */
    private void yields(AdaptiveBackoffIdleStrategy s, WakeSignal bell, int count, boolean unswitched) {
        nanosPerClockRead = unswitched ? 0 : AdaptiveBackoffIdleStrategy.UNSWITCHED_YIELD_NANOS;
        for (int i = 0; i < count; i++) {
            s.idle(bell);
        }
    }

    @Test
    void oversubscribedYieldsThatFindTheCpuFreeMakeTheWaitSleepOnItsSignal() {
        AdaptiveBackoffIdleStrategy s = strategy(true);
        CountingSignal bell = new CountingSignal();
        int before = AdaptiveBackoffIdleStrategy.UNSWITCHED_YIELDS_BEFORE_SLEEP;
        s.reset();
        yields(s, bell, before - 1, true);
        assertEquals(0, bell.arms, "fewer such yields than the limit: no sleep yet");
        yields(s, bell, 1, true);
        assertEquals(1, bell.arms, "the last yield of the run arms the signal");
        assertEquals(0, bell.sleeps);
        yields(s, bell, 1, true);
        assertEquals(1, bell.sleeps, "the next idle, after the caller's poll, sleeps");
        assertEquals(before, s.counts().yields());
        assertEquals(1, s.counts().sleeps());
        assertEquals(1, s.counts().wokenSleeps());
        assertEquals(Phase.YIELDING, s.phase(), "still in the yield phase: only the run of free yields sleeps");
        s.waitEnded();
        assertFalse(bell.armed);
    }

    @Test
    void theRunOfFreeYieldsBeforeASleepRunsOnAcrossWaitsAndStartsOverWhenAYieldSwitches() {
        AdaptiveBackoffIdleStrategy s = strategy(true);
        CountingSignal bell = new CountingSignal();
        int before = AdaptiveBackoffIdleStrategy.UNSWITCHED_YIELDS_BEFORE_SLEEP;
        s.reset();
        yields(s, bell, before - 1, true);
        yields(s, bell, 1, false);
        yields(s, bell, before - 1, true);
        assertEquals(0, bell.arms, "a yield that let another thread run starts the run over");
        s.waitEnded();
        s.reset();
        yields(s, bell, 1, true);
        assertEquals(1, bell.arms, "the run goes on from wait to wait: it tells how the CPU is shared");
        s.waitEnded();
        assertFalse(bell.armed, "an ended wait disarms");
        s.reset();
        yields(s, bell, 200, false);
        assertEquals(1, bell.arms, "yields that switch never sleep");
        assertEquals(0, bell.sleeps);
    }

    @Test
    void suchSleepsAreAtLeastTheGapApart() {
        AdaptiveBackoffIdleStrategy s = strategy(true);
        CountingSignal bell = new CountingSignal();
        int run = AdaptiveBackoffIdleStrategy.UNSWITCHED_YIELDS_BEFORE_SLEEP;
        long gap = AdaptiveBackoffIdleStrategy.UNSWITCHED_SLEEP_GAP_NANOS;
        s.reset();
        yields(s, bell, run + 1, true);
        assertEquals(1, bell.sleeps);
        now += gap - 1;
        yields(s, bell, 10 * run, true);
        assertEquals(1, bell.arms, "runs of free yields within the gap only yield");
        now += 1;
        yields(s, bell, run + 1, true);
        assertEquals(2, bell.sleeps, "the gap since the first sleep is over");
        s.waitEnded();
        now += gap;
        s.reset();
        yields(s, bell, 1, false);
        yields(s, bell, run + 1, true);
        assertEquals(3, bell.sleeps, "a yield that switched restarts only the run");
    }

    @Test
    void spinInsteadSpinsWhereTheWaitWouldYieldAndStillSleepsWhenTheYieldsWouldEnd() {
        AdaptiveBackoffIdleStrategy s = strategy(false);
        CountingSignal bell = new CountingSignal();
        s.reset();
        s.idle(bell, true); // the wait's start, at START
        now = START + SPIN;
        for (int i = 0; i < 4 * AdaptiveBackoffIdleStrategy.CLOCK_EVERY; i++) {
            s.idle(bell, true);
        }
        assertEquals(Phase.YIELDING, s.phase(), "the phases go by time");
        assertEquals(0, s.counts().yields());
        assertEquals(1 + 4 * AdaptiveBackoffIdleStrategy.CLOCK_EVERY, s.counts().spins());
        now = START + SPIN + AdaptiveBackoffIdleStrategy.YIELD_NANOS;
        for (int i = 0; i <= AdaptiveBackoffIdleStrategy.CLOCK_EVERY; i++) {
            s.idle(bell, true);
        }
        assertEquals(1, bell.arms, "where the yields would end, the wait arms its signal and sleeps as always");
        assertEquals(1, bell.sleeps);
        s.waitEnded();

        AdaptiveBackoffIdleStrategy over = strategy(true);
        over.reset();
        for (int i = 0; i < 10; i++) {
            over.idle(null, true);
        }
        assertEquals(10, over.counts().yields(), "oversubscribed: yields are how the other ranks run");
    }

    @Test
    void aMoveOffASharedCpuStartsTheWaitOverWithTheSpin() {
        AdaptiveBackoffIdleStrategy s = strategy(false);
        s.reset();
        assertEquals(Phase.SPINNING, idleAt(s, 0));
        long movedAt = SPIN + 1_000;
        assertEquals(Phase.YIELDING, idleAt(s, movedAt));
        s.movedOffSharedCpu();
        assertEquals(Phase.SPINNING, s.phase(), "on the new CPU the wait spins before it yields");
        assertEquals(Phase.SPINNING, idleAt(s, movedAt));
        assertEquals(Phase.SPINNING, idleAt(s, movedAt + SPIN - 1));
        assertEquals(Phase.YIELDING, idleAt(s, movedAt + SPIN));
        assertEquals(1, s.counts().cpuMoves());
    }

    @Test
    void yieldsThatFindTheCpuFreeSleepOnlyWhereRanksOutnumberTheCpus() {
        AdaptiveBackoffIdleStrategy s = strategy(false);
        CountingSignal bell = new CountingSignal();
        s.reset();
        s.idle(bell); // the wait's start, at START
        now = START + SPIN;
        yields(s, bell, 100, true);
        assertEquals(Phase.YIELDING, s.phase());
        assertEquals(0, bell.arms, "a rank with a CPU to itself learns a longer spin instead");
        AdaptiveBackoffIdleStrategy over = strategy(true);
        over.reset();
        yields(over, null, 100, true);
        assertEquals(100, over.counts().yields(), "without a wake signal it keeps yielding");
        assertEquals(0, over.counts().sleeps());
    }
}
