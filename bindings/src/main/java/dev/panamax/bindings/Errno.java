package dev.panamax.bindings;

import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.StructLayout;
import java.lang.invoke.VarHandle;
import java.util.Map;

/**
 * errno captured per call with {@link Linker.Option#captureCallState(String...)}.
 *
 * <p>Each caller allocates its own capture segment ({@link #allocate(SegmentAllocator)}) and passes it as
 * the first argument of an errno-capturing downcall; errno is read from that segment right after the call
 * ({@link #errno(MemorySegment)}). Nothing is kept in a shared static, so concurrent callers do not see each
 * other's errno.
 */
public final class Errno {
    /** The option that makes a downcall handle capture errno into its leading segment argument. */
    public static final Linker.Option CAPTURE = Linker.Option.captureCallState("errno");

    /** Layout of the capture segment. */
    public static final StructLayout LAYOUT = Linker.Option.captureStateLayout();

    private static final VarHandle ERRNO = LAYOUT.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    /** Linux errno values used in messages (asm-generic/errno-base.h, errno.h). */
    public static final int EPERM = 1, ENOENT = 2, EINTR = 4, EIO = 5, ENXIO = 6, EAGAIN = 11, ENOMEM = 12,
            EACCES = 13, EFAULT = 14, EBUSY = 16, EEXIST = 17, ENODEV = 19, EINVAL = 22, ENOSPC = 28,
            ENOSYS = 38, EPROTO = 71, EOPNOTSUPP = 95, ETIMEDOUT = 110;

    private static final Map<Integer, String> NAMES = Map.ofEntries(
            Map.entry(EPERM, "EPERM"), Map.entry(ENOENT, "ENOENT"), Map.entry(EINTR, "EINTR"),
            Map.entry(EIO, "EIO"), Map.entry(ENXIO, "ENXIO"), Map.entry(EAGAIN, "EAGAIN"),
            Map.entry(ENOMEM, "ENOMEM"), Map.entry(EACCES, "EACCES"), Map.entry(EFAULT, "EFAULT"),
            Map.entry(EBUSY, "EBUSY"), Map.entry(EEXIST, "EEXIST"), Map.entry(ENODEV, "ENODEV"),
            Map.entry(EINVAL, "EINVAL"), Map.entry(ENOSPC, "ENOSPC"), Map.entry(ENOSYS, "ENOSYS"),
            Map.entry(EPROTO, "EPROTO"), Map.entry(EOPNOTSUPP, "EOPNOTSUPP"), Map.entry(ETIMEDOUT, "ETIMEDOUT"));

    private Errno() {
    }

    /** A fresh capture segment for one call (or a sequence of calls by one thread). */
    public static MemorySegment allocate(SegmentAllocator allocator) {
        return allocator.allocate(LAYOUT);
    }

    /** The errno captured into {@code state} by the last call that used it. */
    public static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    /** The symbolic name of a Linux errno value, for example {@code ENOSYS}, or {@code errno <n>}. */
    public static String name(int errno) {
        return NAMES.getOrDefault(errno, "errno " + errno);
    }

    /** {@code NAME (n)}, for messages. */
    public static String describe(int errno) {
        String name = NAMES.get(errno);
        return name == null ? "errno " + errno : name + " (" + errno + ")";
    }
}
