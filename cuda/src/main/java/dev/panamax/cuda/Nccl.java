package dev.panamax.cuda;

import dev.panamax.bindings.NativeLibrary;
import dev.panamax.bindings.nccl.nccl_h;
import dev.panamax.bindings.nccl.ncclUniqueId;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Entry point to NCCL: is it there, which version, new communicator ids.
 *
 * <p>libnccl.so.2 is loaded (by the soname, or from {@code panamax.library.nccl} / {@code PANAMAX_LIBRARY_NCCL},
 * for example the file inside the Python package {@code nvidia-nccl-cu13}) and {@code ncclGetVersion} called once,
 * lazily, on first use. NCCL is available when both succeed; otherwise {@link #isAvailable()} is false,
 * {@link #unavailabilityCause()} says why, and the other methods throw {@link IllegalStateException} with that
 * cause.
 */
public final class Nccl {
    private Nccl() {
    }

    /** The outcome of loading the library and {@code ncclGetVersion}, computed once on first use. */
    private static final class Init {
        static final int VERSION;
        static final Throwable CAUSE;

        static {
            int version = 0;
            Throwable cause;
            if (!NativeLibrary.NCCL.isAvailable()) {
                cause = new UnsatisfiedLinkError(NativeLibrary.NCCL.unavailabilityCause());
            } else {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment v = arena.allocate(ValueLayout.JAVA_INT);
                    int rc = nccl_h.ncclGetVersion(v);
                    version = v.get(ValueLayout.JAVA_INT, 0);
                    cause = rc == 0 ? null : NcclCalls.error("ncclGetVersion", rc, null);
                } catch (LinkageError | RuntimeException e) {
                    cause = e;
                }
            }
            VERSION = version;
            CAUSE = cause;
        }
    }

    /** Whether libnccl can be loaded and {@code ncclGetVersion} succeeded. */
    public static boolean isAvailable() {
        return Init.CAUSE == null;
    }

    /**
     * Why NCCL is not available: an {@link UnsatisfiedLinkError} naming libnccl.so.2 and the setting that would
     * point at it ({@code panamax.library.nccl} / {@code PANAMAX_LIBRARY_NCCL}), or the {@link NcclException} of
     * {@code ncclGetVersion}; {@code null} when it is available.
     */
    public static Throwable unavailabilityCause() {
        return Init.CAUSE;
    }

    /** The library's version code ({@code ncclGetVersion}), {@code NCCL_VERSION(major, minor, patch)}: 22805 for
     * 2.28.5. */
    public static int version() {
        requireAvailable();
        return Init.VERSION;
    }

    /** The library's version as {@code major.minor.patch}, for example {@code 2.28.5}. */
    public static String versionString() {
        return versionString(version());
    }

    /**
     * A version code as {@code major.minor.patch}. Codes follow
     * {@code NCCL_VERSION(X,Y,Z) = (X <= 2 && Y <= 8) ? X*1000 + Y*100 + Z : X*10000 + Y*100 + Z}.
     */
    static String versionString(int code) {
        if (code < 0) {
            throw new IllegalArgumentException("NCCL version code must be >= 0: " + code);
        }
        // Codes below 10000 are from NCCL 2.8 and older (X*1000 + Y*100 + Z).
        int major = code >= 10000 ? code / 10000 : code / 1000;
        int rest = code >= 10000 ? code % 10000 : code % 1000;
        return major + "." + rest / 100 + "." + rest % 100;
    }

    /** A new communicator id ({@code ncclGetUniqueId}); the bytes carry the creating rank's bootstrap address. */
    public static NcclUniqueId newUniqueId() {
        requireAvailable();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment id = arena.allocate(ncclUniqueId.layout());
            int rc = nccl_h.ncclGetUniqueId(id);
            if (rc != nccl_h.ncclSuccess()) {
                throw NcclCalls.error("ncclGetUniqueId", rc, null);
            }
            return new NcclUniqueId(id.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    static void requireAvailable() {
        Throwable cause = Init.CAUSE;
        if (cause != null) {
            throw new IllegalStateException("NCCL is not available: " + cause.getMessage(), cause);
        }
    }
}
