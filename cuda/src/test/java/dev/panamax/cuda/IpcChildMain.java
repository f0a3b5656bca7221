package dev.panamax.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Run in a child JVM by {@link IpcTest}: maps the parent's device memory from the handle (hex), checks it
 * holds pattern 1, writes pattern 2. Exits 0 when all went well, 2 when the data was wrong.
 * Arguments: handle hex, byte size, device ordinal.
 */
public final class IpcChildMain {
    private IpcChildMain() {
    }

    public static void main(String[] args) {
        IpcMemoryHandle handle = IpcMemoryHandle.fromHex(args[0]);
        long byteSize = Long.parseLong(args[1]);
        int ordinal = Integer.parseInt(args[2]);
        try (CudaContext context = Cuda.device(ordinal).retainPrimaryContext(); Arena arena = Arena.ofConfined()) {
            DeviceMemory mapped = context.openIpc(handle);
            System.out.println("child: mapped " + mapped);
            if (mapped.byteSize() < byteSize) {
                System.out.println("child: mapped only " + mapped.byteSize() + " of " + byteSize + " bytes");
                System.exit(2);
            }
            DeviceMemory data = mapped.slice(0, byteSize);
            MemorySegment host = arena.allocate(byteSize);
            data.copyToHost(host);
            long bad = CudaTestDevice.firstMismatch(host, 1);
            if (bad >= 0) {
                System.out.println("child: byte " + bad + " differs from the parent's pattern");
                System.exit(2);
            }
            CudaTestDevice.fillPattern(host, 2);
            data.copyFromHost(host);
            context.synchronize();
            mapped.close();
        }
        System.out.println("child: ok");
    }
}
