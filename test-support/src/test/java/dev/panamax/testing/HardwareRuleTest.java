package dev.panamax.testing;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.opentest4j.AssertionFailedError;
import org.opentest4j.TestAbortedException;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The skip-or-fail rule of hardware tests, and the tags their annotations carry. */
class HardwareRuleTest {
    @Test
    void aMissingGpuSkipsUnlessItIsRequired() {
        Map<String, String> unset = Map.of();
        TestAbortedException skipped = assertThrows(TestAbortedException.class,
                () -> GpuTestSupport.skipUnlessRequired("PANAMAX_REQUIRE_GPU", "no CUDA device 0", unset::get));
        assertEquals("no CUDA device 0", skipped.getMessage());
        assertThrows(TestAbortedException.class, () -> GpuTestSupport.skipUnlessRequired("PANAMAX_REQUIRE_GPU",
                "no CUDA device 0", Map.of("PANAMAX_REQUIRE_GPU", "0")::get));
        AssertionFailedError failed = assertThrows(AssertionFailedError.class,
                () -> GpuTestSupport.skipUnlessRequired("PANAMAX_REQUIRE_GPU", "no CUDA device 0",
                        Map.of("PANAMAX_REQUIRE_GPU", "1")::get));
        assertEquals("PANAMAX_REQUIRE_GPU=1 but no CUDA device 0", failed.getMessage());
    }

    @Test
    void tooFewDevicesAndMissingRdmaAlwaysSkip() {
        TestAbortedException e = assertThrows(TestAbortedException.class, () -> GpuTestSupport.tooFewDevices(2, 1));
        assertEquals("needs 2 CUDA devices, 1 visible", e.getMessage());
        assertThrows(TestAbortedException.class, () -> RdmaTestSupport.rdmaMissing("no RDMA devices"));
    }

    @Test
    void theAnnotationsCarryTheTagsTheScriptsSelect() {
        assertArrayEquals(new String[] {"gpu"}, tags(GpuTest.class));
        assertArrayEquals(new String[] {"rdma"}, tags(RdmaTest.class));
    }

    private static String[] tags(Class<?> annotation) {
        return new String[] {annotation.getAnnotation(Tag.class).value()};
    }
}
