package dev.panamax.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.locks.LockSupport;

/**
 * Keeps helper ranks in lockstep with a benchmark thread whose number of operations is decided by
 * JMH: rank 0 publishes how many operations it has started ({@link #issue}), each helper runs
 * exactly that many ({@link #follow}) and returns once rank 0 has {@link #stop stopped} and it has
 * caught up. The two counters live in a small memory segment: plain shared memory for helper
 * threads, a memory-mapped file for helper processes.
 */
public final class LockstepCounters implements AutoCloseable {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final long ISSUED = 0;
    private static final long STOPPED = 8;
    private static final long BYTES = 64;

    private final Arena arena;
    private final MemorySegment segment;
    private final Path file;
    private long issued;

    private LockstepCounters(Arena arena, MemorySegment segment, Path file) {
        this.arena = arena;
        this.segment = segment;
        this.file = file;
    }

    /** Counters for helper threads of this JVM. */
    public static LockstepCounters inMemory() {
        Arena arena = Arena.ofShared();
        MemorySegment s = arena.allocate(BYTES, 64);
        s.fill((byte) 0);
        return new LockstepCounters(arena, s, null);
    }

    /** New counters in a fresh file (under /dev/shm when there is one) for helper processes; {@link #close} deletes it.
     * */
    public static LockstepCounters createFile() {
        try {
            Path dir = Path.of("/dev/shm");
            Path f = Files.isDirectory(dir) && Files.isWritable(dir)
                    ? Files.createTempFile(dir, "panamax-bench-", ".lockstep")
                    : Files.createTempFile("panamax-bench-", ".lockstep");
            Files.write(f, new byte[(int) BYTES]);
            return map(f, true);
        } catch (IOException e) {
            throw new UncheckedIOException("could not create the lockstep counters file: " + e.getMessage(), e);
        }
    }

    /** Maps the counters that another process created at {@code file}. */
    public static LockstepCounters openFile(Path file) {
        try {
            return map(file, false);
        } catch (IOException e) {
            throw new UncheckedIOException("could not open the lockstep counters file " + file + ": " + e.getMessage(),
                    e);
        }
    }

    private static LockstepCounters map(Path f, boolean owner) throws IOException {
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment s = ch.map(FileChannel.MapMode.READ_WRITE, 0, BYTES, arena);
            return new LockstepCounters(arena, s, owner ? f : null);
        }
    }

    /** The file backing these counters, or null for in-memory ones. */
    public Path file() {
        return file;
    }

    /** Rank 0, before each operation: one more operation for the helpers to run. Single writer. */
    public void issue() {
        LONG.setRelease(segment, ISSUED, ++issued);
    }

    /** Rank 0, after its last operation: the helpers return once they have run every issued operation. */
    public void stop() {
        LONG.setRelease(segment, STOPPED, 1L);
    }

    /** A helper: runs {@code op} once per issued operation until rank 0 stops; returns the number run. */
    public long follow(Runnable op) {
        long done = 0;
        int idle = 0;
        while (true) {
            if ((long) LONG.getAcquire(segment, ISSUED) > done) {
                op.run();
                done++;
                idle = 0;
                continue;
            }
            if ((long) LONG.getAcquire(segment, STOPPED) != 0 && (long) LONG.getAcquire(segment, ISSUED) <= done) {
                return done;
            }
            // Spin while rank 0 is issuing; back off between JMH iterations so helpers leave the CPU alone.
            if (idle < 20_000) {
                Thread.onSpinWait();
            } else if (idle < 21_000) {
                Thread.yield();
            } else {
                LockSupport.parkNanos(50_000);
            }
            idle++;
        }
    }

    @Override
    public void close() {
        arena.close();
        if (file != null) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // a stale file in /dev/shm is harmless
            }
        }
    }
}
