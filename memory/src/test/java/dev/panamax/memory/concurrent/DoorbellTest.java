package dev.panamax.memory.concurrent;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The sleep and wake-up protocol of {@link Doorbell} on real futexes: a ring after the arm is never lost, whether it
 * comes before the sleeper entered the kernel or after; an unrung sleep ends at its timeout; a ring with nobody
 * armed leaves the word alone. Checked across processes by the shared-memory transport's tests.
 */
@EnabledOnOs(OS.LINUX)
class DoorbellTest {
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    @Test
    void isSupportedOnLinux() {
        assertTrue(Doorbell.isSupported());
    }

    @Test
    void aRingBetweenArmAndSleepMakesTheSleepReturnAtOnce() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment word = arena.allocate(Doorbell.BYTES, 4);
            Doorbell sleeper = new Doorbell(word);
            sleeper.arm();
            assertTrue(new Doorbell(word).ring(), "the ring found the sleeper armed");
            // A lost ring would sleep the full minute.
            assertTrue(sleeper.sleep(TimeUnit.MINUTES.toNanos(1)));
            assertFalse(sleeper.isArmed());
            assertEquals(0, word.get(ValueLayout.JAVA_INT, 0));
        }
    }

    @Test
    void anUnrungSleepEndsAtItsTimeoutAndDisarms() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment word = arena.allocate(Doorbell.BYTES, 4);
            Doorbell sleeper = new Doorbell(word);
            sleeper.arm();
            assertFalse(sleeper.sleep(1_000_000), "nobody rang: the sleep timed out");
            assertEquals(0, word.get(ValueLayout.JAVA_INT, 0));
        }
    }

    @Test
    void aRingWithNobodyArmedLeavesTheWordAlone() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment word = arena.allocate(Doorbell.BYTES, 4);
            assertFalse(new Doorbell(word).ring(), "nobody to wake");
            assertEquals(0, word.get(ValueLayout.JAVA_INT, 0));
            Doorbell sleeper = new Doorbell(word);
            sleeper.arm();
            sleeper.disarm();
            assertFalse(new Doorbell(word).ring(), "the sleeper disarmed");
            assertEquals(0, word.get(ValueLayout.JAVA_INT, 0));
        }
    }

    /**
     * The protocol as the transports use it, once per round: a writer publishes the round's number and rings; the
     * sleeper arms, polls the number once more and sleeps only if it has not moved, then acknowledges. The writer
     * waits for each acknowledgement, so every round needs its own wake-up, and the rings land before, during and
     * after the sleeper's entry into the kernel. A lost wake-up leaves the sleeper asleep for its one-minute
     * timeout and the writer's bounded wait for the acknowledgement fails.
     */
    @Test
    void noWakeUpIsLostBetweenAThreadThatPublishesAndOneThatSleeps() throws InterruptedException {
        int rounds = 2000;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment word = arena.allocate(Doorbell.BYTES, 4);
            MemorySegment sequence = arena.allocate(4, 4);
            MemorySegment ack = arena.allocate(4, 4);
            AtomicInteger timedOut = new AtomicInteger();
            Thread sleeperThread = Thread.ofPlatform().start(() -> {
                Doorbell sleeper = new Doorbell(word);
                for (int round = 1; round <= rounds; round++) {
                    while ((int) INT.getAcquire(sequence, 0L) < round) {
                        sleeper.arm();
                        if ((int) INT.getAcquire(sequence, 0L) >= round) {
                            sleeper.disarm();
                            break;
                        }
                        if (!sleeper.sleep(TimeUnit.MINUTES.toNanos(1))) {
                            timedOut.incrementAndGet();
                        }
                    }
                    INT.setRelease(ack, 0L, round);
                }
            });
            Doorbell writer = new Doorbell(word);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            for (int round = 1; round <= rounds; round++) {
                for (int i = 0; i < (round % 64); i++) {
                    Thread.onSpinWait(); // vary when the write lands against the sleeper's arm and sleep
                }
                INT.setRelease(sequence, 0L, round);
                writer.ring();
                while ((int) INT.getAcquire(ack, 0L) < round) {
                    if (System.nanoTime() > deadline) {
                        throw new AssertionError("round " + round + " was never acknowledged: a lost wake-up");
                    }
                    Thread.onSpinWait();
                }
            }
            sleeperThread.join(TimeUnit.SECONDS.toMillis(30));
            assertFalse(sleeperThread.isAlive());
            assertEquals(0, timedOut.get(), "sleeps that ran into their timeout instead of being woken");
        }
    }

    @Test
    void rejectsAWordItCannotSleepOn() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment block = arena.allocate(16, 8);
            assertThrows(IllegalArgumentException.class, () -> new Doorbell(block.asSlice(2, 4)));
            assertThrows(IllegalArgumentException.class, () -> new Doorbell(block.asSlice(0, 2)));
            Doorbell unarmed = new Doorbell(block);
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> unarmed.sleep(1000));
            assertTrue(e.getMessage().contains("arm"), e.getMessage());
        }
    }
}
