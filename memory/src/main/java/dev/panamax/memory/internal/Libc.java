package dev.panamax.memory.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * The few libc calls Panamax makes itself (memfd_create, close, process_vm_readv, strerror), with
 * errno captured per call through {@link Linker.Option#captureCallState}.
 */
public final class Libc {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");

    /** struct iovec { void *iov_base; size_t iov_len; } */
    public static final StructLayout IOVEC = MemoryLayout.structLayout(
            ValueLayout.ADDRESS.withName("iov_base"), ValueLayout.JAVA_LONG.withName("iov_len"));

    private static final MethodHandle MEMFD_CREATE = downcall("memfd_create",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT), CAPTURE_ERRNO);
    private static final MethodHandle CLOSE = downcall("close",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), CAPTURE_ERRNO);
    private static final MethodHandle PROCESS_VM_READV = downcall("process_vm_readv",
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                    ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG), CAPTURE_ERRNO, Linker.Option.critical(false));
    private static final MethodHandle STRERROR = downcall("strerror",
            FunctionDescriptor.of(ValueLayout.ADDRESS.withTargetLayout(MemoryLayout.sequenceLayout(1024, ValueLayout.JAVA_BYTE)),
                    ValueLayout.JAVA_INT));

    /** MFD_CLOEXEC from linux/memfd.h. */
    public static final int MFD_CLOEXEC = 1;

    private Libc() {
    }

    private static MethodHandle downcall(String name, FunctionDescriptor fd, Linker.Option... options) {
        return LIBC.find(name).map(s -> LINKER.downcallHandle(s, fd, options)).orElse(null);
    }

    /** {@code int memfd_create(const char *name, unsigned int flags);} Returns the fd. */
    public static int memfdCreate(String name, int flags) {
        require(MEMFD_CREATE, "memfd_create");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            int fd = (int) MEMFD_CREATE.invokeExact(state, arena.allocateFrom(name), flags);
            if (fd < 0) {
                throw new NativeCallException("memfd_create", fd, errno(state));
            }
            return fd;
        } catch (NativeCallException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("memfd_create", t);
        }
    }

    /** {@code int close(int fd);} */
    public static void close(int fd) {
        require(CLOSE, "close");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            int rc = (int) CLOSE.invokeExact(state, fd);
            if (rc != 0) {
                throw new NativeCallException("close", rc, errno(state));
            }
        } catch (NativeCallException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("close", t);
        }
    }

    /** True when process_vm_readv is present in this libc. */
    public static boolean hasProcessVmReadv() {
        return PROCESS_VM_READV != null;
    }

    /**
     * {@code ssize_t process_vm_readv(pid_t pid, const struct iovec *local_iov, unsigned long liovcnt,
     * const struct iovec *remote_iov, unsigned long riovcnt, unsigned long flags);} with one iovec each.
     * {@code scratch} holds two iovecs and the call state ({@link #cmaScratchLayout()}), so that the
     * hot path allocates nothing. Returns the bytes read, or throws with errno.
     */
    public static long processVmReadv(int pid, MemorySegment local, long remoteAddress, long byteSize, MemorySegment scratch) {
        MemorySegment liov = scratch.asSlice(0, IOVEC.byteSize());
        MemorySegment riov = scratch.asSlice(IOVEC.byteSize(), IOVEC.byteSize());
        MemorySegment state = scratch.asSlice(2 * IOVEC.byteSize(), CAPTURE.byteSize());
        liov.set(ValueLayout.ADDRESS, 0, local);
        liov.set(ValueLayout.JAVA_LONG, 8, byteSize);
        riov.set(ValueLayout.JAVA_LONG, 0, remoteAddress);
        riov.set(ValueLayout.JAVA_LONG, 8, byteSize);
        long rc;
        try {
            rc = (long) PROCESS_VM_READV.invokeExact(state, pid, liov, 1L, riov, 1L, 0L);
        } catch (Throwable t) {
            throw new IllegalStateException("process_vm_readv", t);
        }
        if (rc < 0) {
            throw new NativeCallException("process_vm_readv", rc, errno(state));
        }
        return rc;
    }

    /** Layout of the scratch memory {@link #processVmReadv} needs. */
    public static MemoryLayout cmaScratchLayout() {
        return MemoryLayout.structLayout(IOVEC.withName("local"), IOVEC.withName("remote"), CAPTURE.withName("state"));
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    /** The text of {@code strerror(errnum)}. */
    public static String strerror(int errnum) {
        if (STRERROR == null) {
            return "errno " + errnum;
        }
        try {
            MemorySegment s = (MemorySegment) STRERROR.invokeExact(errnum);
            return s.getString(0);
        } catch (Throwable t) {
            return "errno " + errnum;
        }
    }

    private static void require(MethodHandle h, String name) {
        if (h == null) {
            throw new UnsupportedOperationException("libc has no " + name + " on this system");
        }
    }
}
