package dev.panamax.memory.internal;

/** A failed native call: names the call, its return code, errno and strerror. */
public final class NativeCallException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String call;
    private final long returnCode;
    private final int errno;

    public NativeCallException(String call, long returnCode, int errno) {
        super(call + " failed: returned " + returnCode + ", errno " + errno + " (" + Libc.strerror(errno) + ")");
        this.call = call;
        this.returnCode = returnCode;
        this.errno = errno;
    }

    public String call() {
        return call;
    }

    public long returnCode() {
        return returnCode;
    }

    public int errno() {
        return errno;
    }
}
