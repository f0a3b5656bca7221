package dev.panamax.collectives;

import dev.panamax.collectives.gpu.GpuCommunicator;
import dev.panamax.testing.GpuTest;
import dev.panamax.testing.GpuTestSupport;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Rank processes sharing one GPU run {@link GpuCommunicator} all-reduces (ring and rhd) through
 * CUDA IPC and check every element ({@link GpuRankProcess}). Skips with the reason without CUDA or
 * a device; with {@code PANAMAX_REQUIRE_GPU=1} that reason fails the test instead.
 */
@GpuTest
class GpuMultiProcessTest {
    @ParameterizedTest(name = "{0} processes")
    @ValueSource(ints = {2, 3})
    void processesAllReduceDeviceMemory(int n) throws Exception {
        GpuRequirements.requireGpu(false, 1);
        GpuTestSupport.runRankProcesses(GpuRankProcess.class, n, r -> GpuTestSupport.ORDINAL);
    }
}
