package dev.panamax.cuda;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Error formatting, with a code table standing in for the driver's. */
class CudaCallsTest {
    private static final Map<Integer, String[]> TABLE = Map.of(
            2, new String[] {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
            100, new String[] {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"});

    private static final ErrorNames FAKE = new ErrorNames() {
        @Override
        public String name(int code) {
            String[] e = TABLE.get(code);
            return e == null ? null : e[0];
        }

        @Override
        public String description(int code) {
            String[] e = TABLE.get(code);
            return e == null ? null : e[1];
        }
    };

    @Test
    void messagesNameTheCallTheCodeAndItsDescription() {
        CudaException e = CudaCalls.error("cuMemAlloc_v2(1024)", 2, FAKE);
        assertEquals("cuMemAlloc_v2(1024): CUDA_ERROR_OUT_OF_MEMORY (2): out of memory", e.getMessage());
        assertEquals("cuMemAlloc_v2(1024)", e.call());
        assertEquals(2, e.code());
        assertEquals("CUDA_ERROR_OUT_OF_MEMORY", e.errorName());
        assertEquals("cuInit(0): CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected",
                CudaCalls.error("cuInit(0)", 100, FAKE).getMessage());
    }

    @Test
    void unknownCodesKeepTheirNumber() {
        CudaException e = CudaCalls.error("cuStreamQuery(stream 0x10 of device 0)", 12345, FAKE);
        assertEquals("cuStreamQuery(stream 0x10 of device 0): CUresult 12345 (12345): unknown error code",
                e.getMessage());
        assertEquals("CUresult 12345", e.errorName());
    }

    @Test
    void successIsNotAnError() {
        CudaCalls.check(0, "cuCtxSynchronize"); // no exception, and no driver call to name the code
    }

    @Test
    void hexAddresses() {
        assertEquals("0x7f2a00000000", CudaCalls.hex(0x7f2a00000000L));
    }
}
