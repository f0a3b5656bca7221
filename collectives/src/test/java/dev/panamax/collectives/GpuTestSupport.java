package dev.panamax.collectives;

import dev.panamax.cuda.Cuda;
import dev.panamax.cuda.Nccl;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.abort;

/**
 * For the collectives tests tagged "gpu": skips, with the reason, without libcuda, the device (or NCCL) a
 * test needs. With PANAMAX_REQUIRE_GPU=1 (PANAMAX_REQUIRE_NCCL=1 for NCCL) the missing library or device
 * fails the test instead, so that a run on a GPU machine cannot pass by skipping; a test that needs more
 * devices than the machine has always skips.
 */
public final class GpuTestSupport {
    /** The device the tests use: PANAMAX_CUDA_DEVICE, default 0. */
    public static final int ORDINAL = Integer.parseInt(System.getenv().getOrDefault("PANAMAX_CUDA_DEVICE", "0"));

    private GpuTestSupport() {
    }

    /** Skips (or fails, see above) unless CUDA, device {@link #ORDINAL}, NCCL when {@code nccl}, and {@code devices} devices are here. */
    public static void requireGpu(boolean nccl, int devices) {
        String reason = null;
        if (!Cuda.isAvailable()) {
            reason = "no CUDA: " + Cuda.unavailabilityCause().getMessage();
        } else if (Cuda.deviceCount() <= ORDINAL) {
            reason = "no CUDA device " + ORDINAL + " (" + Cuda.deviceCount() + " visible)";
        }
        if (reason != null) {
            if ("1".equals(System.getenv("PANAMAX_REQUIRE_GPU"))) {
                fail("PANAMAX_REQUIRE_GPU=1 but " + reason);
            }
            abort(reason);
        }
        if (nccl && !Nccl.isAvailable()) {
            reason = "no NCCL: " + Nccl.unavailabilityCause().getMessage();
            if ("1".equals(System.getenv("PANAMAX_REQUIRE_NCCL"))) {
                fail("PANAMAX_REQUIRE_NCCL=1 but " + reason);
            }
            abort(reason);
        }
        if (Cuda.deviceCount() < devices) {
            abort("needs " + devices + " CUDA devices, " + Cuda.deviceCount() + " visible");
        }
    }
}
