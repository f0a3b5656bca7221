package dev.panamax.testing;

import static org.junit.jupiter.api.Assumptions.abort;

/**
 * The rule of the tests that need an RDMA device ({@link RdmaTest}): a test skips, with the reason, when
 * libibverbs, a device or an active port is missing. Unlike a GPU ({@link GpuTestSupport}) no setting turns
 * that into a failure: the RDMA runs select these tests by their tag on a machine set up for them.
 *
 * <p>This module cannot see the verbs API (the verbs module's tests use it), so the caller finds out what is
 * missing and says why.
 */
public final class RdmaTestSupport {
    /** The variable that names the device the tests open; unset, they open the first. */
    public static final String DEVICE = "PANAMAX_RDMA_DEVICE";

    private RdmaTestSupport() {
    }

    /** The name of the device the tests open: {@code PANAMAX_RDMA_DEVICE}, or null for the first device. */
    public static String deviceName() {
        return System.getenv(DEVICE);
    }

    /** libibverbs, a device or an active port is missing, for {@code reason}: skips. Never returns. */
    public static void rdmaMissing(String reason) {
        abort(reason);
    }
}
