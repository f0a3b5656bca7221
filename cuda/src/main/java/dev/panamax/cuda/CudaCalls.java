package dev.panamax.cuda;

import dev.panamax.bindings.cuda.cuda_h;
import dev.panamax.bindings.cuda.support.CudaMacros;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * What the classes of this package share around their driver calls: error checking and the exceptions, the
 * current-context rule, the legacy-stream wait of the synchronous copies, and address formatting.
 */
final class CudaCalls {
    private CudaCalls() {
    }

    /** Throws a {@link CudaException} for {@code call} when {@code rc} is not {@code CUDA_SUCCESS}. */
    static void check(int rc, String call) {
        if (rc != 0) {
            throw error(call, rc);
        }
    }

    /** The exception for a failed call, named with the driver's table. */
    static CudaException error(String call, int code) {
        return error(call, code, ErrorNames.DRIVER);
    }

    /** The exception for a failed call, named with {@code names}; unknown codes keep their number. */
    static CudaException error(String call, int code, ErrorNames names) {
        String name = names.name(code);
        String description = names.description(code);
        return new CudaException(call, code, name != null ? name : "CUresult " + code,
                description != null ? description : "unknown error code");
    }

    /**
     * Makes {@code context} current on the calling thread. Every call that needs a context makes its owner's
     * context current first: threads share contexts and another library may have changed the current one.
     */
    static void setCurrent(MemorySegment context) {
        int rc = cuda_h.cuCtxSetCurrent(context);
        if (rc != 0) {
            throw error("cuCtxSetCurrent(" + hex(context.address()) + ")", rc);
        }
    }

    /** Waits for the work queued on the legacy default stream, which the synchronous copies use. */
    static void synchronizeLegacyStream() {
        check(cuda_h.cuStreamSynchronize(CudaMacros.CU_STREAM_LEGACY), "cuStreamSynchronize(CU_STREAM_LEGACY)");
    }

    /** {@code 0x...}. */
    static String hex(long address) {
        return "0x" + Long.toHexString(address);
    }

    /**
     * The size of the allocation that contains {@code address} ({@code cuMemGetAddressRange_v2}), and its
     * base in {@code base[0]}.
     */
    static long allocationRange(long address, long[] base) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pbase = arena.allocate(ValueLayout.JAVA_LONG);
            MemorySegment psize = arena.allocate(ValueLayout.JAVA_LONG);
            int rc = cuda_h.cuMemGetAddressRange_v2(pbase, psize, address);
            check(rc, "cuMemGetAddressRange_v2(" + hex(address) + ")");
            base[0] = pbase.get(ValueLayout.JAVA_LONG, 0);
            return psize.get(ValueLayout.JAVA_LONG, 0);
        }
    }
}
