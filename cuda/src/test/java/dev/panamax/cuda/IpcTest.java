package dev.panamax.cuda;

import dev.panamax.bindings.cuda.cuda_h;
import dev.panamax.testing.ChildJvm;
import dev.panamax.testing.GpuTest;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.abort;

/** Device memory shared with a child process through an IPC handle (CUDA IPC does not work within one process). */
@GpuTest
class IpcTest {

    @Test
    void aChildProcessReadsAndWritesTheParentsDeviceMemory() throws Exception {
        long n = (1L << 20) + 3;
        try (CudaContext context = CudaTestDevice.context(); Arena arena = Arena.ofConfined();
             DeviceMemory memory = context.allocate(n)) {
            IpcMemoryHandle handle;
            try {
                handle = memory.ipcHandle();
            } catch (CudaException e) {
                if (e.code() == cuda_h.CUDA_ERROR_NOT_SUPPORTED()) {
                    abort("CUDA IPC is not supported here: " + e.getMessage());
                }
                throw e;
            }
            assertThrows(IllegalStateException.class, () -> memory.slice(0, 16).ipcHandle());
            MemorySegment host = arena.allocate(n);
            CudaTestDevice.fillPattern(host, 1);
            memory.copyFromHost(host);

            List<String> options = new ArrayList<>();
            String library = System.getProperty("panamax.library.cuda");
            if (library != null) {
                options.add("-Dpanamax.library.cuda=" + library);
            }
            ChildJvm.Result child = ChildJvm.run(IpcChildMain.class, options,
                    List.of(handle.toHex(), Long.toString(n), Integer.toString(context.device().ordinal())),
                    Duration.ofSeconds(120));
            assertEquals(0, child.exitCode(), child.output());

            memory.copyToHost(host);
            CudaTestDevice.assertPattern(host, 2);
        }
    }
}
