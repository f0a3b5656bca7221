package dev.panamax.memory.internal;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

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

    @Test
    @EnabledOnOs(OS.LINUX)
    void theCurrentCpuIsOneOfTheMachines() {
        int cpu = Libc.currentCpu();
        assertTrue(cpu >= 0 && cpu < Libc.CPU_SET_BYTES * 8, "sched_getcpu answered " + cpu);
    }

    @Test
    @EnabledOnOs(OS.LINUX)
    void movingOffACpuMigratesTheThreadAndGivesItsCpusBack() {
        int cpus = Runtime.getRuntime().availableProcessors();
        assumeTrue(cpus >= 2, "needs 2 CPUs");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment masks = arena.allocate(2 * Libc.CPU_SET_BYTES, 8);
            int cpu = Libc.currentCpu();
            assertTrue(Libc.moveOffCpu(cpu, masks));
            assertNotEquals(cpu, Libc.currentCpu());
            // availableProcessors() counts the calling thread's affinity mask on Linux.
            assertEquals(cpus, Runtime.getRuntime().availableProcessors());
        }
    }

    @Test
    @EnabledOnOs(OS.LINUX)
    void aCpuTheThreadMayNotUseIsRefused() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment masks = arena.allocate(2 * Libc.CPU_SET_BYTES, 8);
            int cpus = Runtime.getRuntime().availableProcessors();
            assertFalse(Libc.moveOffCpu(-1, masks));
            assertFalse(Libc.moveOffCpu((int) (Libc.CPU_SET_BYTES * 8), masks));
            assertFalse(Libc.moveOffCpu((int) (Libc.CPU_SET_BYTES * 8) - 1, masks), "not one of this machine's");
            assertEquals(cpus, Runtime.getRuntime().availableProcessors());
        }
    }

    @Test
    @EnabledOnOs(OS.LINUX)
    void theAffinityOfAProcessIsItsMaskAndOfNoProcessUnknown() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mask = arena.allocate(Libc.CPU_SET_BYTES, 8);
            int cpus = Libc.affinity(ProcessHandle.current().pid(), mask);
            assertTrue(cpus >= Runtime.getRuntime().availableProcessors(), cpus + " CPUs in this process's mask"
                    + " (availableProcessors may be lower, by a quota, never higher)");
            assertEquals(cpus, Libc.cpuCount(mask));
            Process gone = new ProcessBuilder("true").start();
            gone.waitFor();
            assertEquals(-1, Libc.affinity(gone.pid(), mask), "a process that exited and was reaped");
            assertEquals(-1, Libc.affinity(0, mask), "pid 0 (the calling thread) is not a process id here");
        }
    }

    @Test
    @EnabledOnOs(OS.LINUX)
    void pollFindsAFileReadableAtOnceAndWaitsOutItsTimeoutOnNoDescriptor() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pollfd = arena.allocate(Libc.POLLFD_BYTES, 8);
            MemorySegment state = Libc.allocateCallState(arena);
            int fd = Libc.memfdCreate("panamax-poll-test", Libc.MFD_CLOEXEC);
            try {
                Libc.setNonBlocking(fd);
                assertTrue(Libc.pollReadable(fd, 5_000_000_000L, pollfd, state), "a file is always readable");
            } finally {
                Libc.close(fd);
            }
            // poll ignores a negative descriptor: nothing can become readable, so it waits out the timeout.
            long start = System.nanoTime();
            assertFalse(Libc.pollReadable(-1, 20_000_000, pollfd, state));
            assertTrue(System.nanoTime() - start >= 19_000_000, "returned before its timeout");
        }
    }

    @Test
    @EnabledOnOs(OS.LINUX)
    void makingABadDescriptorNonBlockingNamesTheCallAndTheError() {
        NativeCallException e = assertThrows(NativeCallException.class, () -> Libc.setNonBlocking(-1));
        assertTrue(e.getMessage().contains("fcntl(F_GETFL)"), e.getMessage());
        assertTrue(e.getMessage().contains(Libc.strerror(9)), e.getMessage()); // EBADF
    }
}
