package dev.panamax.testing;

import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.function.IntUnaryOperator;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.abort;

/**
 * The rule of the tests that need a GPU ({@link GpuTest}): a test skips, with the reason, when libcuda, the
 * device or NCCL it needs is missing. With {@code PANAMAX_REQUIRE_GPU=1} a missing library or device fails the
 * test instead, so that a run on a GPU machine cannot pass by skipping; {@code PANAMAX_REQUIRE_NCCL=1} does the
 * same for NCCL. A test that needs more devices than the machine has always skips.
 *
 * <p>This module cannot see the CUDA API (the cuda module's tests use it), so the caller finds out what is
 * missing and says why; for example:
 * <pre>{@code
 * if (!Cuda.isAvailable()) {
 *     GpuTestSupport.gpuMissing("no CUDA: " + Cuda.unavailabilityCause().getMessage());
 * }
 * }</pre>
 */
public final class GpuTestSupport {
    /** The variable that makes a missing GPU a failure when it is {@code 1}. */
    public static final String REQUIRE_GPU = "PANAMAX_REQUIRE_GPU";
    /** The variable that makes a missing NCCL a failure when it is {@code 1}. */
    public static final String REQUIRE_NCCL = "PANAMAX_REQUIRE_NCCL";
    /** The variable that names the device the tests use, and that rank processes are given. */
    public static final String DEVICE = "PANAMAX_CUDA_DEVICE";
    /** The device the tests use: {@code PANAMAX_CUDA_DEVICE}, default 0. */
    public static final int ORDINAL = Integer.parseInt(System.getenv().getOrDefault(DEVICE, "0"));
    /** How long the rank processes of {@link #runRankProcesses} may run. */
    public static final Duration RANK_PROCESS_TIMEOUT = Duration.ofSeconds(300);

    private GpuTestSupport() {
    }

    /** libcuda or the device is missing, for {@code reason}: fails with {@code PANAMAX_REQUIRE_GPU=1}, else skips. */
    public static void gpuMissing(String reason) {
        skipUnlessRequired(REQUIRE_GPU, reason, System::getenv);
    }

    /** NCCL is missing, for {@code reason}: fails with {@code PANAMAX_REQUIRE_NCCL=1}, else skips. */
    public static void ncclMissing(String reason) {
        skipUnlessRequired(REQUIRE_NCCL, reason, System::getenv);
    }

    /** The test needs {@code needed} devices and {@code visible} are there: skips whatever the settings. */
    public static void tooFewDevices(int needed, int visible) {
        abort("needs " + needed + " CUDA devices, " + visible + " visible");
    }

    /**
     * Fails the test when the variable {@code require} is {@code 1} in {@code environment}, else skips it;
     * either way with {@code reason}. Never returns.
     */
    static void skipUnlessRequired(String require, String reason, UnaryOperator<String> environment) {
        if ("1".equals(environment.apply(require))) {
            fail(require + "=1 but " + reason);
        }
        abort(reason);
    }

    /**
     * Runs {@code main} as {@code n} rank processes of one job ({@link RankProcesses#runExpectingOk}), rank r on
     * device {@code device(r)} ({@code PANAMAX_CUDA_DEVICE}), and asserts that each finishes within
     * {@link #RANK_PROCESS_TIMEOUT}, exits 0 and prints OK.
     */
    public static void runRankProcesses(Class<?> main, int n, IntUnaryOperator device, String... args)
            throws IOException, InterruptedException {
        RankProcesses.runExpectingOk(main, n, r -> Map.of(DEVICE, Integer.toString(device.applyAsInt(r))),
                RANK_PROCESS_TIMEOUT, args);
    }
}
