package dev.panamax.verbs;

import dev.panamax.testing.ChildJvm;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Without libibverbs the API says so, naming the library and the setting that would point at it. */
class MissingLibraryTest {

    @Test
    void missingLibraryIsReportedWithTheLibraryAndTheSetting() throws Exception {
        String missing = "/nonexistent/panamax/libibverbs.so.1";
        String out = runJvm("-Dpanamax.library.ibverbs=" + missing);
        String cause = "libibverbs.so.1: library not available (" + missing
                + ", set by panamax.library.ibverbs or PANAMAX_LIBRARY_IBVERBS, does not exist)";
        assertTrue(out.contains("available=false\n"), out);
        assertTrue(out.contains("cause=" + cause + "\n"), out);
        assertTrue(out.contains("devices=RDMA verbs are not available: " + cause + "\n"), out);
        assertTrue(out.contains("open=RDMA verbs are not available: " + cause + "\n"), out);
    }

    private static String runJvm(String property) throws Exception {
        ChildJvm.Result r = ChildJvm.run(MissingLibraryMain.class, List.of(property), List.of(),
                env -> env.remove("PANAMAX_LIBRARY_IBVERBS"), Duration.ofSeconds(60));
        assertEquals(0, r.exitCode(), r.output());
        return r.output();
    }
}
