package dev.panamax.testing;

import org.junit.jupiter.api.Test;
import org.opentest4j.AssertionFailedError;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ChildJvmTest {
    /** Prints its arguments, a property and a variable, and exits with the status it is given. */
    public static final class EchoMain {
        public static void main(String[] args) {
            System.out.println("args=" + String.join(",", args));
            System.out.println("property=" + System.getProperty("panamax.test.echo"));
            System.out.println("variable=" + System.getenv("PANAMAX_TEST_ECHO"));
            System.err.println("on stderr");
            System.exit(Integer.parseInt(args[0]));
        }
    }

    @Test
    void runsAMainInAJvmLikeThisOne() throws Exception {
        ChildJvm.Result r = ChildJvm.run(EchoMain.class, List.of("-Dpanamax.test.echo=p"), List.of("3", "b"),
                env -> env.put("PANAMAX_TEST_ECHO", "v"), Duration.ofSeconds(60));
        assertEquals(3, r.exitCode(), r.output());
        assertTrue(r.output().contains("args=3,b\n"), r.output());
        assertTrue(r.output().contains("property=p\n"), r.output());
        assertTrue(r.output().contains("variable=v\n"), r.output());
        assertTrue(r.output().contains("on stderr\n"), r.output());
    }

    @Test
    void rankProcessesGetTheLaunchVariables() {
        ProcessBuilder pb = RankProcesses.builder(EchoMain.class, 2, 4, 12345, List.of("0"));
        assertEquals("2", pb.environment().get("PANAMAX_RANK"));
        assertEquals("4", pb.environment().get("PANAMAX_WORLD_SIZE"));
        assertEquals("127.0.0.1", pb.environment().get("PANAMAX_MASTER_ADDR"));
        assertEquals("12345", pb.environment().get("PANAMAX_MASTER_PORT"));
        List<String> cmd = pb.command();
        assertEquals(ChildJvm.javaLauncher(), cmd.getFirst());
        assertTrue(cmd.containsAll(List.of("--enable-native-access=ALL-UNNAMED", "--add-modules",
                "jdk.incubator.vector", EchoMain.class.getName())), cmd.toString());
        assertEquals("0", cmd.getLast());
    }

    @Test
    void aJobOfRankProcessesPassesWhenEveryRankExitsZeroSayingOk() throws Exception {
        RankProcesses.runExpectingOk(EchoMain.class, 2, r -> Map.of("PANAMAX_TEST_ECHO", "rank" + r),
                Duration.ofSeconds(120), "0", "OK");
        AssertionFailedError e = assertThrows(AssertionFailedError.class, () -> RankProcesses.runExpectingOk(
                EchoMain.class, 2, r -> Map.of("PANAMAX_TEST_ECHO", "rank" + r), Duration.ofSeconds(120), "3"));
        // Every rank's status and output, named.
        String report = e.getMessage();
        assertTrue(report.contains("rank 0 exited with 3:\n"), report);
        assertTrue(report.contains("rank 1 exited with 3:\n"), report);
        assertTrue(report.contains("args=3\nproperty=null\nvariable=rank1\n"), report);
    }

    @Test
    void aJobOfRankProcessesCanWantWholeLinesOfEachRank() throws Exception {
        RankProcesses.runExpectingOk(EchoMain.class, 2, r -> Map.of("PANAMAX_TEST_ECHO", "rank" + r),
                r -> List.of("variable=rank" + r), Duration.ofSeconds(120), "0", "OK");
        // A line that only contains the wanted one is not it.
        AssertionFailedError e = assertThrows(AssertionFailedError.class, () -> RankProcesses.runExpectingOk(
                EchoMain.class, 2, r -> Map.of("PANAMAX_TEST_ECHO", "rank" + r), r -> List.of("variable=rank"),
                Duration.ofSeconds(120), "0", "OK"));
        assertTrue(e.getMessage().contains("rank 1 exited with 0 (wanted [variable=rank]):\n"), e.getMessage());
    }
}
