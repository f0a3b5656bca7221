package dev.panamax.verbs;

import dev.panamax.bindings.Errno;
import dev.panamax.memory.internal.Libc;

/**
 * A failed verbs call. The message names the verb, the return code or errno and its {@code strerror} text,
 * and what was being done (device, queue pair, ...).
 */
public class VerbsException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String verb;
    private final int code;

    /**
     * @param verb    the failed call, for example {@code ibv_modify_qp}
     * @param code    its error number (errno, a returned error number, or a work completion status)
     * @param message the full message
     */
    public VerbsException(String verb, int code, String message) {
        super(message);
        this.verb = verb;
        this.code = code;
    }

    /** The verb that failed, for example {@code ibv_reg_mr} or {@code ibv_poll_cq}. */
    public String verb() {
        return verb;
    }

    /**
     * The error number: errno for calls that report through errno, the returned error number for calls that
     * return one (negative returns are made positive), the work completion status for
     * {@link WorkCompletionException}; {@code -1} when the call gave no number.
     */
    public int code() {
        return code;
    }

    /** A call that returned NULL or -1 and set errno. */
    static VerbsException errno(String verb, int errno, String context) {
        return new VerbsException(verb, errno,
                verb + " failed: errno " + errno + " " + describe(errno) + suffix(context));
    }

    /** A call that returned an error number (positive, or negative as some providers do) instead of 0. */
    static VerbsException returned(String verb, long rc, String context) {
        int code = (int) Math.abs(rc);
        String what = rc == -1 ? "returned -1" : "returned " + rc + " " + describe(code);
        return new VerbsException(verb, rc == -1 ? -1 : code, verb + " failed: " + what + suffix(context));
    }

    /** {@code EINVAL (Invalid argument)}, or {@code (No data available)} for errnos without a known name. */
    static String describe(int errno) {
        String name = Errno.name(errno);
        String text = "(" + Libc.strerror(errno) + ")";
        return name.startsWith("errno ") ? text : name + " " + text;
    }

    private static String suffix(String context) {
        return context == null || context.isEmpty() ? "" : "; " + context;
    }
}
