package dev.panamax.cuda;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.abort;

/**
 * For the tests tagged "gpu": the device (ordinal 0, or PANAMAX_CUDA_DEVICE), skipping with the reason when
 * there is no libcuda or no device. With PANAMAX_REQUIRE_GPU=1 those reasons fail the test instead, so that a
 * run on a GPU machine cannot pass by skipping.
 */
final class GpuTestSupport {
    static final int ORDINAL = Integer.parseInt(System.getenv().getOrDefault("PANAMAX_CUDA_DEVICE", "0"));
    static final long MIB = 1L << 20;

    private GpuTestSupport() {
    }

    static CudaDevice device() {
        if (!Cuda.isAvailable()) {
            skip("no CUDA: " + Cuda.unavailabilityCause().getMessage());
        }
        int count = Cuda.deviceCount();
        if (count <= ORDINAL) {
            skip("no CUDA device " + ORDINAL + " (" + count + " visible)");
        }
        return Cuda.device(ORDINAL);
    }

    static CudaContext context() {
        return device().retainPrimaryContext();
    }

    /**
     * The context of the test device, skipping also when NCCL is not available (no libnccl.so.2; point
     * PANAMAX_LIBRARY_NCCL at the one in the Python package nvidia-nccl-cu13). PANAMAX_REQUIRE_NCCL=1 makes
     * that reason a failure.
     */
    static CudaContext ncclContext() {
        CudaDevice device = device();
        if (!Nccl.isAvailable()) {
            String reason = "no NCCL: " + Nccl.unavailabilityCause().getMessage();
            if ("1".equals(System.getenv("PANAMAX_REQUIRE_NCCL"))) {
                fail("PANAMAX_REQUIRE_NCCL=1 but " + reason);
            }
            abort(reason);
        }
        return device.retainPrimaryContext();
    }

    private static void skip(String reason) {
        if ("1".equals(System.getenv("PANAMAX_REQUIRE_GPU"))) {
            fail("PANAMAX_REQUIRE_GPU=1 but " + reason);
        }
        abort(reason);
    }

    /** The byte at {@code index} of pattern {@code seed}: not periodic, so shifted data does not match. */
    static byte patternByte(long index, int seed) {
        return (byte) ((index * 0x9E3779B97F4A7C15L + seed * 0x632BE59BD9B4E019L) >>> 56);
    }

    static void fillPattern(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(ValueLayout.JAVA_BYTE, i, patternByte(i, seed));
        }
    }

    /** The first index where {@code s} differs from pattern {@code seed}, or -1. */
    static long firstMismatch(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(ValueLayout.JAVA_BYTE, i) != patternByte(i, seed)) {
                return i;
            }
        }
        return -1;
    }

    /** Checks every byte of {@code s} against pattern {@code seed}. */
    static void assertPattern(MemorySegment s, int seed) {
        long i = firstMismatch(s, seed);
        if (i >= 0) {
            fail("byte " + i + " of " + s.byteSize() + ": expected " + patternByte(i, seed) + ", got "
                    + s.get(ValueLayout.JAVA_BYTE, i));
        }
    }

    /** Checks that every byte of {@code s} is {@code value}. */
    static void assertAll(MemorySegment s, byte value) {
        for (long i = 0; i < s.byteSize(); i++) {
            byte b = s.get(ValueLayout.JAVA_BYTE, i);
            if (b != value) {
                fail("byte " + i + " of " + s.byteSize() + ": expected " + value + ", got " + b);
            }
        }
    }

    /** The output of a finished child JVM. */
    record ChildResult(int exitCode, String output) {
    }

    /**
     * Runs {@code mainClass} in a child JVM with this JVM's java.home and class path, waiting at most
     * {@code timeoutSeconds}; its output goes through a file so that a hung child cannot block the wait.
     */
    static ChildResult runJvm(List<String> jvmOptions, Class<?> mainClass, List<String> args, long timeoutSeconds)
            throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.addAll(jvmOptions);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(mainClass.getName());
        cmd.addAll(args);
        Path out = Files.createTempFile("panamax-cuda-child", ".log");
        try {
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile());
            Process p = pb.start();
            if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                fail("child JVM " + mainClass.getSimpleName() + " did not finish within " + timeoutSeconds + " s: "
                        + Files.readString(out, StandardCharsets.UTF_8));
            }
            return new ChildResult(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
        }
    }
}
