package dev.panamax.lightgbm;

/** A LightGBM C API call returned an error: names the call, its return code and LightGBM's last error. */
public class LightGbmException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String call;
    private final int code;

    /** The failure of {@code call}, which returned {@code code}; {@code lastError} is LGBM_GetLastError(). */
    public LightGbmException(String call, int code, String lastError) {
        super(call + " returned " + code + ": " + lastError);
        this.call = call;
        this.code = code;
    }

    /** The C function that failed, for example {@code LGBM_BoosterCreate}. */
    public String call() {
        return call;
    }

    /** Its return code (LightGBM returns -1 on every error). */
    public int code() {
        return code;
    }
}
