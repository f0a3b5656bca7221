package dev.panamax.cuda;

import dev.panamax.testing.ChildJvm;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Without libcuda the API says so, naming the library and the setting that would point at it. */
class MissingLibraryTest {

    @Test
    void missingLibraryIsReportedWithTheLibraryAndTheSetting() throws Exception {
        String missing = "/nonexistent/panamax/libcuda.so.1";
        ChildJvm.Result r = ChildJvm.run(MissingLibraryMain.class, List.of("-Dpanamax.library.cuda=" + missing),
                List.of(),
                Duration.ofSeconds(60));
        String out = r.output();
        assertEquals(0, r.exitCode(), out);
        String cause = "libcuda.so.1: library not available (" + missing
                + ", set by panamax.library.cuda or PANAMAX_LIBRARY_CUDA, does not exist)";
        assertTrue(out.contains("available=false\n"), out);
        assertTrue(out.contains("cause=UnsatisfiedLinkError: " + cause + "\n"), out);
        assertTrue(out.contains("deviceCount=CUDA is not available: " + cause + "\n"), out);
        assertTrue(out.contains("device=CUDA is not available: " + cause + "\n"), out);
    }
}
