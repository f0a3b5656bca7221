package dev.panamax.bench.perf;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class RankProcessesTest {
    @Test
    void theWrapperGoesInFrontWithTheRankSubstituted() {
        List<String> cmd = List.of("java", "-cp", "x.jar", "Main");
        assertEquals(List.of("ip", "netns", "exec", "pmx-r3", "env", "PANAMAX_NODE=n3", "java", "-cp", "x.jar", "Main"),
                RankProcesses.wrap("  ip netns exec pmx-r{rank}\tenv PANAMAX_NODE=n{rank} ", 3, cmd));
    }

    @Test
    void noWrapperLeavesTheCommandAlone() {
        List<String> cmd = List.of("java", "Main");
        assertEquals(cmd, RankProcesses.wrap(null, 1, cmd));
        assertEquals(cmd, RankProcesses.wrap("  ", 1, cmd));
    }
}
