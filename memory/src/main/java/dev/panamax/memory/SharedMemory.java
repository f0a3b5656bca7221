package dev.panamax.memory;

import dev.panamax.memory.internal.Libc;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Shared-memory segments mapped by several processes of one host.
 *
 * <p>Anonymous regions ({@link #create}) are memfd files: another process maps one through
 * {@code /proc/<pid>/fd/<fd>} of its creator ({@link #attach}). They have no name in the file
 * system, so nothing is left behind when any process dies; the memory is freed once the last
 * mapping and descriptor are gone. Named regions ({@link #createNamed}) live in {@code /dev/shm}
 * for processes that only share a name; {@link #unlink} removes the name once all have attached.
 */
public final class SharedMemory {
    private static final Path DEV_SHM = Path.of("/dev/shm");

    private SharedMemory() {
    }

    /** What another process of this host needs to map an anonymous region. */
    public record Handle(long pid, int fd, long byteSize) {
        /** {@code pid:fd:byteSize}, for exchange through a bootstrap store. */
        public String encode() {
            return pid + ":" + fd + ":" + byteSize;
        }

        public static Handle decode(String s) {
            String[] p = s.split(":");
            if (p.length != 3) {
                throw new IllegalArgumentException("not a shared-memory handle: '" + s + "'");
            }
            return new Handle(Long.parseLong(p[0]), Integer.parseInt(p[1]), Long.parseLong(p[2]));
        }
    }

    /** A mapped region; closing it unmaps it (and, for the creator, closes the memfd). Closes once. */
    public static final class Region implements AutoCloseable {
        private final MemorySegment segment;
        private final Arena arena;
        private final Handle handle;
        private final boolean owner;
        private final AtomicBoolean closed = new AtomicBoolean();

        private Region(MemorySegment segment, Arena arena, Handle handle, boolean owner) {
            this.segment = segment;
            this.arena = arena;
            this.handle = handle;
            this.owner = owner;
        }

        /** The mapping, valid until {@link #close}. */
        public MemorySegment segment() {
            return segment;
        }

        /** How other processes attach (the creator's pid and fd), or null for a named region. */
        public Handle handle() {
            return handle;
        }

        public boolean isOwner() {
            return owner;
        }

        @Override
        public void close() {
            if (!closed.compareAndSet(false, true)) {
                return;
            }
            arena.close();
            if (owner && handle != null) {
                Libc.close(handle.fd());
            }
        }
    }

    /** Creates an anonymous (memfd) region of {@code byteSize} bytes, zeroed. */
    public static Region create(String debugName, long byteSize) {
        checkSize(byteSize);
        int fd = Libc.memfdCreate("panamax-" + debugName, Libc.MFD_CLOEXEC);
        boolean ok = false;
        try {
            Path self = Path.of("/proc/self/fd/" + fd);
            try (RandomAccessFile f = new RandomAccessFile(self.toFile(), "rw")) {
                f.setLength(byteSize);
            }
            Arena arena = Arena.ofShared();
            MemorySegment seg = map(self, byteSize, arena);
            ok = true;
            return new Region(seg, arena, new Handle(ProcessHandle.current().pid(), fd, byteSize), true);
        } catch (IOException e) {
            throw new UncheckedIOException("creating a shared-memory region of " + byteSize + " bytes failed", e);
        } finally {
            if (!ok) {
                Libc.close(fd);
            }
        }
    }

    /** Maps a region another process of this host created; fails clearly when that process has exited. */
    public static Region attach(Handle handle) {
        Path p = Path.of("/proc/" + handle.pid() + "/fd/" + handle.fd());
        Arena arena = Arena.ofShared();
        try {
            return new Region(map(p, handle.byteSize(), arena), arena, handle, false);
        } catch (NoSuchFileException e) {
            arena.close();
            throw new IllegalStateException("cannot attach shared memory of process " + handle.pid()
                    + ": the process has exited or closed the region (" + p + " is gone)", e);
        } catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("attaching shared memory " + p + " failed", e);
        }
    }

    /** Creates {@code /dev/shm/<name>} of {@code byteSize} bytes; fails if it exists. */
    public static Region createNamed(String name, long byteSize) {
        checkSize(byteSize);
        Path p = named(name);
        Arena arena = Arena.ofShared();
        try {
            try (FileChannel ch = FileChannel.open(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                    StandardOpenOption.WRITE)) {
                try (RandomAccessFile f = new RandomAccessFile(p.toFile(), "rw")) {
                    f.setLength(byteSize);
                }
                return new Region(ch.map(FileChannel.MapMode.READ_WRITE, 0, byteSize, arena), arena, null, true);
            }
        } catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("creating " + p + " failed", e);
        }
    }

    /** Maps an existing {@code /dev/shm/<name>}. */
    public static Region attachNamed(String name) {
        Path p = named(name);
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            return new Region(ch.map(FileChannel.MapMode.READ_WRITE, 0, ch.size(), arena), arena, null, false);
        } catch (IOException e) {
            arena.close();
            throw new UncheckedIOException("attaching " + p + " failed", e);
        }
    }

    /** Removes {@code /dev/shm/<name>}; existing mappings stay valid. Returns whether it existed. */
    public static boolean unlink(String name) {
        try {
            return Files.deleteIfExists(named(name));
        } catch (IOException e) {
            throw new UncheckedIOException("unlinking /dev/shm/" + name + " failed", e);
        }
    }

    private static Path named(String name) {
        if (name.isEmpty() || name.contains("/") || name.equals(".") || name.equals("..")) {
            throw new IllegalArgumentException("invalid shared-memory name '" + name + "'");
        }
        return DEV_SHM.resolve(name);
    }

    private static MemorySegment map(Path p, long byteSize, Arena arena) throws IOException {
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            if (ch.size() < byteSize) {
                throw new IOException(p + " holds " + ch.size() + " bytes, fewer than the " + byteSize + " expected");
            }
            return ch.map(FileChannel.MapMode.READ_WRITE, 0, byteSize, arena);
        }
    }

    private static void checkSize(long byteSize) {
        if (byteSize <= 0) {
            throw new IllegalArgumentException("shared-memory size must be positive: " + byteSize);
        }
    }
}
