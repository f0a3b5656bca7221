package dev.panamax.cuda;

/**
 * A failed CUDA driver call. The message names the call with its main arguments, the {@code CUresult} name,
 * its number and the driver's description, for example
 * {@code cuMemAlloc_v2(1024): CUDA_ERROR_OUT_OF_MEMORY (2): out of memory}.
 */
public final class CudaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String call;
    private final int code;
    private final String errorName;

    /**
     * @param call        the failed call with its arguments, for example {@code cuMemAlloc_v2(1024)}
     * @param code        the {@code CUresult} it returned
     * @param errorName   the name of the code ({@code cuGetErrorName}), for example {@code CUDA_ERROR_OUT_OF_MEMORY}
     * @param description the driver's description of the code ({@code cuGetErrorString})
     */
    public CudaException(String call, int code, String errorName, String description) {
        super(call + ": " + errorName + " (" + code + "): " + description);
        this.call = call;
        this.code = code;
        this.errorName = errorName;
    }

    /** The failed call with its arguments, for example {@code cuMemAlloc_v2(1024)}. */
    public String call() {
        return call;
    }

    /** The {@code CUresult} the call returned. */
    public int code() {
        return code;
    }

    /** The name of {@link #code()}, for example {@code CUDA_ERROR_OUT_OF_MEMORY}. */
    public String errorName() {
        return errorName;
    }
}
