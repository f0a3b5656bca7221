package dev.panamax.bench.perf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What the perf tool's JIT-quiet wait reads. */
class JitActivityTest {
    @Test
    void cpuTicksAreFieldsFourteenAndFifteenAfterTheThreadName() {
        // A compiler thread's stat line (Linux 6.x): the name holds a space, and a name may hold ')' too.
        String stat = "4711 (C2 CompilerThre) S 4700 4700 0 0 -1 1077936192 1532 0 0 0 173 26 0 0 20 0 30 0 "
                + "1234 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 -1 1 0 0 0 0 0";
        assertEquals(173 + 26, JitActivity.cpuTicks(stat));
        assertEquals(5 + 7, JitActivity.cpuTicks("1 (a) b) R 0 0 0 0 -1 0 0 0 0 0 5 7 0 0 20 0 1 0 1 0 0"));
    }

    @Test
    @EnabledOnOs(OS.LINUX)
    void onLinuxItCountsTheCompilerThreads() {
        long ticks = JitActivity.sample();
        assertTrue(ticks >= 0, "this JVM has compiler threads under /proc/self/task: " + ticks);
    }
}
