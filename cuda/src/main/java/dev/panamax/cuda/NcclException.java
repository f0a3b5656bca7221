package dev.panamax.cuda;

/**
 * A failed NCCL call, or an NCCL operation that did not finish in time. The message names the call with its
 * main arguments, the {@code ncclResult_t} name and number, NCCL's description ({@code ncclGetErrorString}) and,
 * when NCCL recorded one, its last error ({@code ncclGetLastError}), for example
 * {@code ncclAllReduce(count 1024, float32, SUM, rank 0 of 2): ncclInvalidArgument (4): invalid argument
 * (run with NCCL_DEBUG=WARN for details); last error: Invalid config blocking attribute value -2}.
 *
 * <p>A timeout ({@link #isTimeout()}) carries {@code ncclInProgress}: the state NCCL was still in.
 */
public final class NcclException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String call;
    private final int code;
    private final String resultName;
    private final String errorString;
    private final String lastError;
    private final boolean timeout;

    /**
     * @param call        the failed call with its arguments, for example {@code ncclCommFinalize(rank 0 of 2)}
     * @param code        the {@code ncclResult_t} it returned (or reported through {@code ncclCommGetAsyncError})
     * @param resultName  the name of the code, for example {@code ncclUnhandledCudaError}
     * @param errorString NCCL's description of the code ({@code ncclGetErrorString})
     * @param lastError   NCCL's last error message ({@code ncclGetLastError}), empty when there is none
     * @param timeout     whether the call was given up after a timeout rather than failing
     */
    public NcclException(String call, int code, String resultName, String errorString, String lastError,
                         boolean timeout) {
        super(call + ": " + resultName + " (" + code + "): " + errorString
                + (lastError == null || lastError.isEmpty() ? "" : "; last error: " + lastError));
        this.call = call;
        this.code = code;
        this.resultName = resultName;
        this.errorString = errorString;
        this.lastError = lastError == null ? "" : lastError;
        this.timeout = timeout;
    }

    /** The failed call with its arguments. */
    public String call() {
        return call;
    }

    /** The {@code ncclResult_t}. */
    public int code() {
        return code;
    }

    /** The name of {@link #code()}, for example {@code ncclSystemError}. */
    public String resultName() {
        return resultName;
    }

    /** NCCL's description of {@link #code()} ({@code ncclGetErrorString}). */
    public String errorString() {
        return errorString;
    }

    /** NCCL's last error message ({@code ncclGetLastError}); empty when there is none. */
    public String lastError() {
        return lastError;
    }

    /** Whether the operation was abandoned (and the communicator aborted) because it did not finish in time. */
    public boolean isTimeout() {
        return timeout;
    }
}
