package dev.panamax.cuda;

import dev.panamax.testing.ChildJvm;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Without libnccl the API says so, naming the library and the setting that would point at it. */
class NcclMissingLibraryTest {

    @Test
    void missingLibraryIsReportedWithTheLibraryAndTheSetting() throws Exception {
        String missing = "/nonexistent/panamax/libnccl.so.2";
        ChildJvm.Result r = ChildJvm.run(NcclMissingLibraryMain.class, List.of("-Dpanamax.library.nccl=" + missing),
                List.of(),
                Duration.ofSeconds(60));
        String out = r.output();
        assertEquals(0, r.exitCode(), out);
        String cause = "libnccl.so.2: library not available (" + missing
                + ", set by panamax.library.nccl or PANAMAX_LIBRARY_NCCL, does not exist)";
        assertTrue(out.contains("available=false\n"), out);
        assertTrue(out.contains("cause=UnsatisfiedLinkError: " + cause + "\n"), out);
        for (String call : List.of("version", "newUniqueId", "groupStart", "create")) {
            assertTrue(out.contains(call + "=NCCL is not available: " + cause + "\n"), out);
        }
    }
}
