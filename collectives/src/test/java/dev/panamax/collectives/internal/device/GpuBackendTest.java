package dev.panamax.collectives.internal.device;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.GpuRequirements;
import dev.panamax.collectives.Panamax;
import dev.panamax.cuda.Cuda;
import dev.panamax.cuda.CudaContext;
import dev.panamax.testing.GpuTest;
import dev.panamax.testing.GpuTestSupport;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The NCCL backend of {@code GpuCommunicator} and BlueConnect on device memory with NCCL and own
 * stages per level, on real devices ({@link GpuBackendRankProcess} checks every element). One GPU
 * runs: the NCCL backend on one rank, and BlueConnect over 2 processes as topology 1x2 with NCCL on
 * the inner level (groups of one rank: NCCL cannot put two ranks of a communicator on one device)
 * and own stages on the outer, plus own stages on every level of 2x2 (4 processes). Two GPUs add
 * the NCCL backend over 2 processes and 2x2 with NCCL pairs on distinct devices inside.
 *
 * <p>Skips with the reason without CUDA, a device or NCCL; {@code PANAMAX_REQUIRE_GPU=1} makes a
 * missing CUDA or device, {@code PANAMAX_REQUIRE_NCCL=1} a missing NCCL, a failure. Tests that need
 * two devices skip on one whatever is required.
 */
@GpuTest
class GpuBackendTest {
    @Test
    void ncclBackendOnOneRank() {
        GpuRequirements.requireGpu(true, 1);
        List<Communicator> host = Panamax.local(1, TimeUnit.SECONDS.toNanos(60));
        try (CudaContext ctx = Cuda.device(GpuTestSupport.ORDINAL).retainPrimaryContext()) {
            List<String> wrong = GpuBackendRankProcess.run(host.getFirst(), ctx, new String[] {"communicator", "nccl"});
            assertEquals(List.of(), wrong);
        } finally {
            host.getFirst().close();
        }
    }

    @Test
    void blueConnectWithNcclInsideOnOneGpu() throws Exception {
        GpuRequirements.requireGpu(true, 1);
        GpuTestSupport.runRankProcesses(GpuBackendRankProcess.class, 2, r -> GpuTestSupport.ORDINAL, "blueconnect",
                "1x2", "nccl,stages", "true");
    }

    @Test
    void blueConnectWithOwnStagesOnEveryLevelOnOneGpu() throws Exception {
        GpuRequirements.requireGpu(false, 1);
        GpuTestSupport.runRankProcesses(GpuBackendRankProcess.class, 4, r -> GpuTestSupport.ORDINAL, "blueconnect",
                "2x2", "stages,stages", "false");
    }

    @Test
    void ncclBackendOverTwoGpus() throws Exception {
        GpuRequirements.requireGpu(true, 2);
        GpuTestSupport.runRankProcesses(GpuBackendRankProcess.class, 2, r -> r, "communicator", "nccl");
    }

    @Test
    void blueConnectWithNcclPairsInsideOverTwoGpus() throws Exception {
        GpuRequirements.requireGpu(true, 2);
        // 2x2: the inner groups {0,1} and {2,3} are NCCL pairs on devices 0 and 1; the outer ones share a device
        GpuTestSupport.runRankProcesses(GpuBackendRankProcess.class, 4, r -> r % 2, "blueconnect", "2x2", "nccl,stages",
                "false");
    }
}
