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
 * The few libc calls Panamax makes itself (memfd_create, close, strerror, getrusage, the futex system call,
 * sched_getcpu and the calling thread's CPU affinity), with errno captured per call through
 * {@link Linker.Option#captureCallState} where a failure is reported.
 */
public final class Libc {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");

    private static final MethodHandle MEMFD_CREATE = downcall("memfd_create",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT), CAPTURE_ERRNO);
    private static final MethodHandle CLOSE = downcall("close",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT), CAPTURE_ERRNO);
    private static final MethodHandle STRERROR = downcall("strerror",
            FunctionDescriptor.of(ValueLayout.ADDRESS.withTargetLayout(MemoryLayout.sequenceLayout(1024,
                    ValueLayout.JAVA_BYTE)),
                    ValueLayout.JAVA_INT));

    // int getrusage(int who, struct rusage *usage); no errno needed: a failure only means "unknown"
    private static final MethodHandle GETRUSAGE = downcall("getrusage",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS),
            Linker.Option.critical(false));
    /** RUSAGE_THREAD from sys/resource.h (Linux): the calling thread's usage. */
    private static final int RUSAGE_THREAD = 1;
    /**
     * {@code sizeof(struct rusage)} on 64-bit Linux: {@code struct timeval ru_utime, ru_stime} (16 bytes
     * each), then 14 {@code long} fields ending with {@code ru_nvcsw, ru_nivcsw}.
     */
    public static final long RUSAGE_BYTES = 144;
    private static final long RU_NIVCSW = 136;
    private static final boolean IS_LINUX_64 = System.getProperty("os.name", "").startsWith("Linux")
            && ValueLayout.ADDRESS.byteSize() == 8;

    // long syscall(long number, ...); for futex(2), which glibc does not wrap:
    // syscall(SYS_futex, uint32_t *uaddr, int futex_op, uint32_t val, const struct timespec *timeout)
    private static final MethodHandle SYSCALL_FUTEX = downcall("syscall",
            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS,
                    ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS),
            Linker.Option.firstVariadicArg(1), CAPTURE_ERRNO);
    /** SYS_futex of asm/unistd_64.h on x86-64 and asm-generic/unistd.h on arm64; -1 elsewhere (unsupported). */
    private static final long SYS_FUTEX = !IS_LINUX_64 ? -1 : switch (System.getProperty("os.arch", "")) {
        case "amd64", "x86_64" -> 202;
        case "aarch64" -> 98;
        default -> -1;
    };
    /** FUTEX_WAIT and FUTEX_WAKE of linux/futex.h, without FUTEX_PRIVATE_FLAG: the word may be shared by processes. */
    private static final int FUTEX_WAIT = 0;
    private static final int FUTEX_WAKE = 1;
    /** {@code struct timespec}: {@code tv_sec}, {@code tv_nsec}, two longs on 64-bit Linux. */
    public static final long TIMESPEC_BYTES = 16;
    /** errno values of asm-generic/errno-base.h and errno.h a futex wait returns in normal operation. */
    public static final int EINTR = 4;
    public static final int EAGAIN = 11;
    public static final int ETIMEDOUT = 110;

    // int sched_getcpu(void); int sched_{get,set}affinity(pid_t pid, size_t cpusetsize, cpu_set_t *mask);
    // pid 0 is the calling thread. A failure only means "unknown" or "not moved", so no errno.
    private static final MethodHandle SCHED_GETCPU = downcall("sched_getcpu",
            FunctionDescriptor.of(ValueLayout.JAVA_INT), Linker.Option.critical(false));
    private static final MethodHandle SCHED_GETAFFINITY = downcall("sched_getaffinity",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG,
                    ValueLayout.ADDRESS));
    private static final MethodHandle SCHED_SETAFFINITY = downcall("sched_setaffinity",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG,
                    ValueLayout.ADDRESS));
    /** {@code sizeof(cpu_set_t)} of glibc: {@code CPU_SETSIZE} (1024) bits. */
    public static final long CPU_SET_BYTES = 128;

    // int poll(struct pollfd *fds, nfds_t nfds, int timeout); int fcntl(int fd, int cmd, ... /* int arg */);
    private static final MethodHandle POLL = downcall("poll",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                    ValueLayout.JAVA_INT), CAPTURE_ERRNO);
    private static final MethodHandle FCNTL = downcall("fcntl",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT), Linker.Option.firstVariadicArg(2), CAPTURE_ERRNO);
    /** {@code struct pollfd}: {@code int fd; short events; short revents;}. */
    public static final long POLLFD_BYTES = 8;
    /** POLLIN of poll.h; F_GETFL, F_SETFL and O_NONBLOCK of fcntl.h (the same on x86-64 and arm64 Linux). */
    private static final short POLLIN = 1;
    private static final int F_GETFL = 3;
    private static final int F_SETFL = 4;
    private static final int O_NONBLOCK = 04000;

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

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    /**
     * How many times the calling thread has been switched off its CPU while it could still run
     * ({@code ru_nivcsw} of {@code getrusage(RUSAGE_THREAD)}: preemptions, and yields that let another thread
     * run); -1 where that is not available (not 64-bit Linux). {@code buffer} holds {@link #RUSAGE_BYTES}
     * bytes and is overwritten; nothing is allocated.
     */
    public static long involuntaryContextSwitches(MemorySegment buffer) {
        if (GETRUSAGE == null || !IS_LINUX_64) {
            return -1;
        }
        try {
            int rc = (int) GETRUSAGE.invokeExact(RUSAGE_THREAD, buffer);
            return rc == 0 ? buffer.get(ValueLayout.JAVA_LONG, RU_NIVCSW) : -1;
        } catch (Throwable t) {
            return -1;
        }
    }

    /** The CPU the calling thread runs on ({@code sched_getcpu()}), or -1 where that is unknown. */
    public static int currentCpu() {
        if (SCHED_GETCPU == null || !IS_LINUX_64) {
            return -1;
        }
        try {
            return (int) SCHED_GETCPU.invokeExact();
        } catch (Throwable t) {
            return -1;
        }
    }

    /**
     * Moves the calling thread off {@code cpu}: restricts its affinity to the CPUs it may use but that one, which
     * makes the kernel migrate it before the call returns, then gives it back all of them (the scheduler leaves a
     * thread where it runs well). Returns false and changes nothing where {@code cpu} is the only CPU allowed, is not
     * one of them, or the calls are unavailable or fail. {@code masks} is the caller's scratch of 2 *
     * {@link #CPU_SET_BYTES} bytes, so no native memory is allocated per call.
     */
    public static boolean moveOffCpu(int cpu, MemorySegment masks) {
        if (SCHED_GETAFFINITY == null || SCHED_SETAFFINITY == null || !IS_LINUX_64 || cpu < 0
                || cpu >= CPU_SET_BYTES * 8) {
            return false;
        }
        MemorySegment allowed = masks.asSlice(0, CPU_SET_BYTES);
        MemorySegment without = masks.asSlice(CPU_SET_BYTES, CPU_SET_BYTES);
        try {
            if ((int) SCHED_GETAFFINITY.invokeExact(0, CPU_SET_BYTES, allowed) != 0) {
                return false;
            }
            without.copyFrom(allowed);
            long word = cpu / 64 * 8L;
            long bit = 1L << (cpu % 64);
            long bits = without.get(ValueLayout.JAVA_LONG_UNALIGNED, word);
            if ((bits & bit) == 0) {
                return false;
            }
            without.set(ValueLayout.JAVA_LONG_UNALIGNED, word, bits & ~bit);
            boolean other = false;
            for (long i = 0; i < CPU_SET_BYTES && !other; i += 8) {
                other = without.get(ValueLayout.JAVA_LONG_UNALIGNED, i) != 0;
            }
            if (!other || (int) SCHED_SETAFFINITY.invokeExact(0, CPU_SET_BYTES, without) != 0) {
                return false;
            }
            // Restoring can only fail if the allowed set changed meanwhile; the thread then keeps the narrower set.
            int restored = (int) SCHED_SETAFFINITY.invokeExact(0, CPU_SET_BYTES, allowed);
            return restored == 0;
        } catch (Throwable t) {
            return false;
        }
    }

    /**
     * Fills {@code mask} ({@link #CPU_SET_BYTES} bytes) with the CPUs process {@code pid} may run on (the affinity of
     * its main thread, which its other threads inherit unless changed) and returns how many there are; -1 where that is
     * unknown (no such process, or the call is unavailable or fails).
     */
    public static int affinity(long pid, MemorySegment mask) {
        if (SCHED_GETAFFINITY == null || !IS_LINUX_64 || pid <= 0 || pid > Integer.MAX_VALUE) {
            return -1;
        }
        try {
            if ((int) SCHED_GETAFFINITY.invokeExact((int) pid, CPU_SET_BYTES, mask) != 0) {
                return -1;
            }
        } catch (Throwable t) {
            return -1;
        }
        return cpuCount(mask);
    }

    /** How many CPUs a mask of {@link #CPU_SET_BYTES} bytes holds. */
    public static int cpuCount(MemorySegment mask) {
        int n = 0;
        for (long i = 0; i < CPU_SET_BYTES; i += 8) {
            n += Long.bitCount(mask.get(ValueLayout.JAVA_LONG_UNALIGNED, i));
        }
        return n;
    }

    /** Whether {@link #futexWait} and {@link #futexWake} work here (64-bit Linux on x86-64 or arm64). */
    public static boolean hasFutex() {
        return SYSCALL_FUTEX != null && SYS_FUTEX >= 0;
    }

    /**
     * {@code futex(word, FUTEX_WAIT, expected, timeout)}: sleeps while the 32-bit {@code word} (4-byte aligned,
     * possibly in memory shared with other processes) holds {@code expected}, until a {@link #futexWake} on it,
     * the timeout or a signal. Returns 0 when woken, else the errno: {@link #EAGAIN} (the word did not hold
     * {@code expected}), {@link #ETIMEDOUT} or {@link #EINTR}; throws on any other failure.
     * {@code timespec} ({@link #TIMESPEC_BYTES}) and {@code state} ({@link #allocateCallState}) are
     * scratch the caller owns, so that a wait allocates nothing.
     */
    public static int futexWait(MemorySegment word, int expected, long timeoutNanos, MemorySegment timespec,
            MemorySegment state) {
        require(hasFutex() ? SYSCALL_FUTEX : null, "futex");
        timespec.set(ValueLayout.JAVA_LONG, 0, timeoutNanos / 1_000_000_000L);
        timespec.set(ValueLayout.JAVA_LONG, 8, timeoutNanos % 1_000_000_000L);
        long rc;
        try {
            rc = (long) SYSCALL_FUTEX.invokeExact(state, SYS_FUTEX, word, FUTEX_WAIT, expected, timespec);
        } catch (Throwable t) {
            throw new IllegalStateException("futex(FUTEX_WAIT)", t);
        }
        if (rc == 0) {
            return 0;
        }
        int errno = errno(state);
        if (errno == EAGAIN || errno == ETIMEDOUT || errno == EINTR) {
            return errno;
        }
        throw new NativeCallException("futex(FUTEX_WAIT)", rc, errno);
    }

    /**
     * {@code futex(word, FUTEX_WAKE, count)}: wakes up to {@code count} threads (of any process) sleeping in
     * {@link #futexWait} on {@code word}; returns how many it woke. {@code state}: as for {@link #futexWait}.
     */
    public static int futexWake(MemorySegment word, int count, MemorySegment state) {
        require(hasFutex() ? SYSCALL_FUTEX : null, "futex");
        long rc;
        try {
            rc = (long) SYSCALL_FUTEX.invokeExact(state, SYS_FUTEX, word, FUTEX_WAKE, count, MemorySegment.NULL);
        } catch (Throwable t) {
            throw new IllegalStateException("futex(FUTEX_WAKE)", t);
        }
        if (rc < 0) {
            throw new NativeCallException("futex(FUTEX_WAKE)", rc, errno(state));
        }
        return (int) rc;
    }

    /**
     * {@code poll} on one descriptor for {@code POLLIN}: waits until {@code fd} is readable, at most
     * {@code timeoutNanos} (rounded up to whole milliseconds). Returns true when it is readable, false on the
     * timeout or a signal. {@code pollfd} ({@link #POLLFD_BYTES}) and {@code state} ({@link #allocateCallState}) are
     * scratch the caller owns, so that a wait allocates nothing.
     */
    public static boolean pollReadable(int fd, long timeoutNanos, MemorySegment pollfd, MemorySegment state) {
        require(POLL, "poll");
        pollfd.set(ValueLayout.JAVA_INT, 0, fd);
        pollfd.set(ValueLayout.JAVA_SHORT, 4, POLLIN);
        pollfd.set(ValueLayout.JAVA_SHORT, 6, (short) 0);
        int millis = (int) Math.min(Integer.MAX_VALUE, (Math.max(0, timeoutNanos) + 999_999) / 1_000_000);
        int rc;
        try {
            rc = (int) POLL.invokeExact(state, pollfd, 1L, millis);
        } catch (Throwable t) {
            throw new IllegalStateException("poll", t);
        }
        if (rc < 0) {
            int errno = errno(state);
            if (errno == EINTR) {
                return false;
            }
            throw new NativeCallException("poll", rc, errno);
        }
        return rc > 0;
    }

    /** Makes reads of {@code fd} return {@link #EAGAIN} instead of blocking ({@code fcntl(F_SETFL, O_NONBLOCK)}). */
    public static void setNonBlocking(int fd) {
        require(FCNTL, "fcntl");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            int flags = (int) FCNTL.invokeExact(state, fd, F_GETFL, 0);
            if (flags < 0) {
                throw new NativeCallException("fcntl(F_GETFL)", flags, errno(state));
            }
            int rc = (int) FCNTL.invokeExact(state, fd, F_SETFL, flags | O_NONBLOCK);
            if (rc < 0) {
                throw new NativeCallException("fcntl(F_SETFL, O_NONBLOCK)", rc, errno(state));
            }
        } catch (NativeCallException e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("fcntl", t);
        }
    }

    /** A buffer for the errno that {@link #futexWait} and {@link #futexWake} capture. */
    public static MemorySegment allocateCallState(Arena arena) {
        return arena.allocate(CAPTURE);
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
