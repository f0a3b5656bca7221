package dev.panamax.collectives.internal;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.GpuTestSupport;
import dev.panamax.collectives.Panamax;
import dev.panamax.cuda.Cuda;
import dev.panamax.cuda.CudaContext;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
@Tag("gpu")
class GpuBackendTest {
    @Test
    void ncclBackendOnOneRank() {
        GpuTestSupport.requireGpu(true, 1);
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
        GpuTestSupport.requireGpu(true, 1);
        processes(2, r -> GpuTestSupport.ORDINAL, "blueconnect", "1x2", "nccl,stages", "true");
    }

    @Test
    void blueConnectWithOwnStagesOnEveryLevelOnOneGpu() throws Exception {
        GpuTestSupport.requireGpu(false, 1);
        processes(4, r -> GpuTestSupport.ORDINAL, "blueconnect", "2x2", "stages,stages", "false");
    }

    @Test
    void ncclBackendOverTwoGpus() throws Exception {
        GpuTestSupport.requireGpu(true, 2);
        processes(2, r -> r, "communicator", "nccl");
    }

    @Test
    void blueConnectWithNcclPairsInsideOverTwoGpus() throws Exception {
        GpuTestSupport.requireGpu(true, 2);
        // 2x2: the inner groups {0,1} and {2,3} are NCCL pairs on devices 0 and 1; the outer ones share a device
        processes(4, r -> r % 2, "blueconnect", "2x2", "nccl,stages", "false");
    }

    private static void processes(int n, java.util.function.IntUnaryOperator device, String... args) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<Process> ranks = new ArrayList<>();
        List<File> logs = new ArrayList<>();
        try {
            for (int r = 0; r < n; r++) {
                File log = Files.createTempFile("panamax-gpu-backend-rank" + r, ".log").toFile();
                log.deleteOnExit();
                List<String> cmd = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED", "--add-modules", "jdk.incubator.vector",
                        "-cp", System.getProperty("java.class.path"), GpuBackendRankProcess.class.getName()));
                cmd.addAll(List.of(args));
                ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log);
                pb.environment().put("PANAMAX_RANK", Integer.toString(r));
                pb.environment().put("PANAMAX_WORLD_SIZE", Integer.toString(n));
                pb.environment().put("PANAMAX_MASTER_ADDR", "127.0.0.1");
                pb.environment().put("PANAMAX_MASTER_PORT", Integer.toString(port));
                pb.environment().put("PANAMAX_CUDA_DEVICE", Integer.toString(device.applyAsInt(r)));
                pb.environment().remove("PANAMAX_NODE");
                ranks.add(pb.start());
                logs.add(log);
            }
            for (int r = 0; r < n; r++) {
                Process p = ranks.get(r);
                boolean done = p.waitFor(300, TimeUnit.SECONDS);
                String out = read(logs.get(r));
                assertTrue(done, "rank " + r + " did not finish:\n" + out);
                assertEquals(0, p.exitValue(), "rank " + r + ":\n" + out);
                assertTrue(out.contains("OK"), "rank " + r + ":\n" + out);
            }
        } finally {
            for (Process p : ranks) {
                p.destroyForcibly();
            }
        }
    }

    private static String read(File f) {
        try {
            return Files.readString(f.toPath());
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }
}
