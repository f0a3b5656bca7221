package dev.panamax.collectives;

import dev.panamax.cuda.Cuda;
import dev.panamax.cuda.Nccl;
import dev.panamax.testing.GpuTestSupport;

/**
 * What the collectives tests tagged gpu need from the machine: CUDA, the test device
 * ({@link GpuTestSupport#ORDINAL}), NCCL and a number of devices. A missing one skips the test with
 * the reason, or fails it by the rule of {@link GpuTestSupport} (PANAMAX_REQUIRE_GPU=1,
 * PANAMAX_REQUIRE_NCCL=1); too few devices always skips.
 */
public final class GpuRequirements {
    private GpuRequirements() {
    }

    /** Skips (or fails) unless CUDA, the test device, NCCL when {@code nccl}, and {@code devices} devices are here. */
    public static void requireGpu(boolean nccl, int devices) {
        if (!Cuda.isAvailable()) {
            GpuTestSupport.gpuMissing("no CUDA: " + Cuda.unavailabilityCause().getMessage());
        }
        int visible = Cuda.deviceCount();
        if (visible <= GpuTestSupport.ORDINAL) {
            GpuTestSupport.gpuMissing("no CUDA device " + GpuTestSupport.ORDINAL + " (" + visible + " visible)");
        }
        if (nccl && !Nccl.isAvailable()) {
            GpuTestSupport.ncclMissing("no NCCL: " + Nccl.unavailabilityCause().getMessage());
        }
        if (visible < devices) {
            GpuTestSupport.tooFewDevices(devices, visible);
        }
    }
}
