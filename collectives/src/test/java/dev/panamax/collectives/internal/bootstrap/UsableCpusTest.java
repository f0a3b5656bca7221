package dev.panamax.collectives.internal.bootstrap;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The CPUs a host's ranks may run on together, from their affinity masks: ranks bound one to a core must not look
 * oversubscribed (each one's {@code availableProcessors()} is 1).
 */
class UsableCpusTest {
    private final List<Process> started = new ArrayList<>();

    @AfterEach
    void stop() throws InterruptedException {
        for (Process p : started) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void processesBoundToDifferentCpusCountOneEach() throws Exception {
        assumeTwoCpusAndTaskset();
        long[] pids = {bound("0"), bound("1")};
        assertEquals(2, HostIdentity.usableCpus(pids, 1, 1), "one rank per CPU, each bound to its own");
        assertEquals(2, HostIdentity.usableCpus(pids, 2, 2));
    }

    @Test
    void processesBoundToOneCpuShareIt() throws Exception {
        assumeTwoCpusAndTaskset();
        long[] pids = {bound("0"), bound("0"), bound("0")};
        assertEquals(1, HostIdentity.usableCpus(pids, 1, 1));
    }

    @Test
    void aQuotaBelowTheOwnMaskCapsTheCount() throws Exception {
        assumeTwoCpusAndTaskset();
        long[] pids = {bound("0,1"), bound("0,1")};
        assertEquals(2, HostIdentity.usableCpus(pids, 2, 2));
        assertEquals(1, HostIdentity.usableCpus(pids, 1, 2), "availableProcessors 1 with a mask of 2: a quota");
    }

    @Test
    void aMaskThatCannotBeReadLeavesAvailableProcessors() throws Exception {
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor(10, TimeUnit.SECONDS);
        long self = ProcessHandle.current().pid();
        assertEquals(7, HostIdentity.usableCpus(new long[] {self, gone.pid()}, 7, 2), "a process that is gone");
        assertEquals(7, HostIdentity.usableCpus(new long[] {self}, 7, -1), "own mask unknown");
    }

    @Test
    void thisProcessAloneCountsItsOwnCpus() {
        int available = Runtime.getRuntime().availableProcessors();
        int cpus = HostIdentity.usableCpus(new long[] {ProcessHandle.current().pid()});
        assertEquals(available, cpus, "one process: its own mask, or its quota where that is lower");
    }

    /** A process bound to {@code cpus}, once bound: taskset sets the mask, then becomes the sleep. */
    private long bound(String cpus) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("taskset", "-c", cpus, "sleep", "60").start();
        started.add(p);
        Path comm = Path.of("/proc", Long.toString(p.pid()), "comm");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!Files.readString(comm).trim().equals("sleep")) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("taskset -c " + cpus + " did not start sleep within 10 s");
            }
            Thread.sleep(1);
        }
        return p.pid();
    }

    private static void assumeTwoCpusAndTaskset() {
        assumeTrue(Runtime.getRuntime().availableProcessors() >= 2, "needs 2 CPUs");
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/taskset")) || Files.isExecutable(Path.of("/bin/taskset")),
                "needs taskset (util-linux)");
    }
}
