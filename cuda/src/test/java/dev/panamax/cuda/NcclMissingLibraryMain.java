package dev.panamax.cuda;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.Callable;

/** Run in a separate JVM by {@link NcclMissingLibraryTest}, with libnccl pointed at a missing file. */
public final class NcclMissingLibraryMain {
    private NcclMissingLibraryMain() {
    }

    public static void main(String[] args) {
        System.out.println("available=" + Nccl.isAvailable());
        Throwable cause = Nccl.unavailabilityCause();
        System.out.println("cause=" + (cause == null ? "null" : cause.getClass().getSimpleName() + ": "
                + cause.getMessage()));
        attempt("version", () -> Nccl.version());
        attempt("newUniqueId", Nccl::newUniqueId);
        attempt("groupStart", () -> {
            NcclCommunicator.groupStart();
            return null;
        });
        // A made-up context: create must refuse before any CUDA or NCCL call.
        CudaContext context = new CudaContext(new CudaDevice(0, 0), MemorySegment.ofAddress(0x1000));
        attempt("create", () -> NcclCommunicator.create(context, 0, 1,
                new NcclUniqueId(new byte[NcclUniqueId.BYTE_SIZE]), Duration.ofSeconds(1)));
    }

    private static void attempt(String what, Callable<?> call) {
        try {
            System.out.println(what + "=returned " + call.call());
        } catch (IllegalStateException e) {
            System.out.println(what + "=" + e.getMessage());
        } catch (Throwable t) {
            System.out.println(what + "=unexpected " + t);
        }
    }
}
