package dev.panamax.memory.internal;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertTrue;

class LibcTest {
    @Test
    @EnabledOnOs(OS.LINUX)
    void theThreadsInvoluntarySwitchesAreCountedAndNeverGoBack() throws InterruptedException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(Libc.RUSAGE_BYTES, 8);
            long before = Libc.involuntaryContextSwitches(buffer);
            assertTrue(before >= 0, "getrusage(RUSAGE_THREAD) answered " + before);
            // Yields with other threads runnable are involuntary switches; whether one happens depends on the
            // machine, so only the order is checked.
            Thread busy = Thread.ofPlatform().start(() -> {
                long end = System.nanoTime() + 20_000_000;
                while (System.nanoTime() < end) {
                    Thread.onSpinWait();
                }
            });
            for (int i = 0; i < 1000; i++) {
                Thread.yield();
            }
            busy.join();
            long after = Libc.involuntaryContextSwitches(buffer);
            assertTrue(after >= before, before + " then " + after);
        }
    }
}
