package dev.panamax.bindings.cuda.support;

import java.lang.foreign.MemorySegment;

/**
 * The cuda.h macros that are pointer or handle casts, which jextract does not generate. Loading this class
 * does not load libcuda.
 */
public final class CudaMacros {
    private CudaMacros() {
    }

    /** {@code #define CU_STREAM_LEGACY ((CUstream)0x1)} */
    public static final MemorySegment CU_STREAM_LEGACY = MemorySegment.ofAddress(0x1L);

    /** {@code #define CU_STREAM_PER_THREAD ((CUstream)0x2)} */
    public static final MemorySegment CU_STREAM_PER_THREAD = MemorySegment.ofAddress(0x2L);

    /** {@code #define CU_LAUNCH_PARAM_END ((void*)CU_LAUNCH_PARAM_END_AS_INT)}, {@code 0x00} */
    public static final MemorySegment CU_LAUNCH_PARAM_END = MemorySegment.ofAddress(0x0L);

    /** {@code #define CU_LAUNCH_PARAM_BUFFER_POINTER ((void*)CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT)}, {@code 0x01} */
    public static final MemorySegment CU_LAUNCH_PARAM_BUFFER_POINTER = MemorySegment.ofAddress(0x1L);

    /** {@code #define CU_LAUNCH_PARAM_BUFFER_SIZE ((void*)CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT)}, {@code 0x02} */
    public static final MemorySegment CU_LAUNCH_PARAM_BUFFER_SIZE = MemorySegment.ofAddress(0x2L);

    /** {@code #define CU_DEVICE_CPU ((CUdevice)-1)} */
    public static final int CU_DEVICE_CPU = -1;

    /** {@code #define CU_DEVICE_INVALID ((CUdevice)-2)} */
    public static final int CU_DEVICE_INVALID = -2;
}
