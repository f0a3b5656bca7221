package dev.panamax.collectives.internal.device;

import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.internal.runtime.CommunicatorImpl;
import dev.panamax.memory.DataType;
import dev.panamax.memory.concurrent.AdaptiveBackoffIdleStrategy;
import dev.panamax.memory.concurrent.IdleStrategies;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ThreadLocalRandom;
import java.nio.ByteBuffer;

/**
 * The host shared-memory signals of the device stages of one group of same-host ranks: per rank a
 * state word and its process id; per ordered pair of ranks a "ready" line (the receiver says where
 * the sender may write: an exported allocation's handle, an offset and a byte count) and a "done"
 * line (the sender says it has written). Both carry sequence numbers that only grow, written with
 * release and read with acquire semantics, so a line's other fields are read after its number.
 *
 * <p>Every wait is bounded: it fails at once when the awaited rank has closed or failed (its state
 * word) or when its process is gone (checked by process id), and after the timeout otherwise,
 * naming that rank either way. A fresh block is all zeros: every sequence starts at 0.
 */
final class DeviceSignals implements AutoCloseable {
    private static final long MAGIC = 0x70616e616d617847L; // "panamaxG"
    private static final int HEADER = 64;
    private static final int STATE_LINE = 64;
    private static final int READY_LINE = 128;
    private static final int DONE_LINE = 64;
    private static final int READY_OFFSET = 8;
    private static final int READY_BYTES = 16;
    private static final int READY_HANDLE = 32;
    private static final long JOINING = 0;
    private static final long ALIVE = 1;
    private static final long CLOSED = 2;
    private static final long FAILED = 3;
    /** Process liveness costs a system call: check it this often while waiting. */
    private static final long LIVENESS_NANOS = 20_000_000;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final MemorySegment block;
    private final Arena arena;
    private final int rank;
    private final int size;
    private final boolean oversubscribed;
    private final AdaptiveBackoffIdleStrategy backoff;
    private final long myPid = ProcessHandle.current().pid();

    /** A where-to-write announcement read from a ready line. */
    record Ready(byte[] handle, long offset, long byteSize) {
    }

    /**
     * Rank {@code rank}'s view of a block of {@link #byteSize}({@code size}) zeroed bytes that every
     * rank maps; {@code arena} (may be null) is closed by {@link #close}. {@code oversubscribed}: the host's ranks
     * outnumber the CPUs they may run on together, so waits never spin.
     */
    DeviceSignals(MemorySegment block, Arena arena, int rank, int size, boolean oversubscribed) {
        if (block.byteSize() < byteSize(size)) {
            throw new IllegalArgumentException("control block of " + block.byteSize() + " bytes, " + size
                    + " ranks need " + byteSize(size));
        }
        this.block = block;
        this.arena = arena;
        this.rank = rank;
        this.size = size;
        this.oversubscribed = oversubscribed;
        this.backoff = IdleStrategies.adaptiveBackoff(oversubscribed);
        LONG.compareAndSet(block, 0L, 0L, MAGIC);
        block.set(ValueLayout.JAVA_LONG, pidOffset(rank), myPid);
        LONG.setRelease(block, stateLine(rank), ALIVE);
    }

    static long byteSize(int size) {
        return HEADER + (long) size * STATE_LINE + (long) size * size * (READY_LINE + DONE_LINE);
    }

    /**
     * A block in a file under /dev/shm that rank 0 of {@code host} creates and names to the others
     * over {@code host}; the file is removed once every rank has mapped it (a host barrier), so
     * nothing is left behind whatever happens later.
     */
    static DeviceSignals shared(Communicator host) {
        int n = host.size();
        long bytes = byteSize(n);
        MemorySegment name = Arena.ofAuto().allocate(256);
        Path path = null;
        try {
            if (host.rank() == 0) {
                path = Path.of("/dev/shm", "panamax-gpu-" + ProcessHandle.current().pid() + "-"
                        + Long.toHexString(ThreadLocalRandom.current().nextLong()));
                try (FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                        StandardOpenOption.WRITE)) {
                    ch.truncate(bytes); // a new file: truncate to a larger size does nothing, so write the last byte
                    ch.write(ByteBuffer.allocate(1), bytes - 1);
                }
                byte[] b = path.toString().getBytes(StandardCharsets.UTF_8);
                name.asSlice(0, b.length).copyFrom(MemorySegment.ofArray(b));
            }
            host.broadcast(name, 256, DataType.UINT8, 0);
            String p = name.getString(0, StandardCharsets.UTF_8);
            Arena arena = Arena.ofShared();
            MemorySegment seg;
            try (FileChannel ch = FileChannel.open(Path.of(p), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                seg = ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
            } catch (IOException | RuntimeException e) {
                arena.close();
                throw e;
            }
            DeviceSignals cb = new DeviceSignals(seg, arena, host.rank(), n, oversubscribed(host));
            try {
                host.barrier();
            } catch (RuntimeException e) {
                cb.close();
                throw e;
            }
            return cb;
        } catch (IOException e) {
            throw new UncheckedIOException("GPU control block for rank " + host.rank() + ": " + e.getMessage(), e);
        } finally {
            if (path != null) {
                try {
                    Files.deleteIfExists(path);
                } catch (IOException ignored) {
                    // removal is tidiness only; the file is in tmpfs and named uniquely
                }
            }
        }
    }

    /**
     * As {@code host} decides for its own waits, which counts the CPUs of all the host's ranks' affinity masks: ranks
     * bound one to a core each see one CPU, and comparing the rank count with that would make them never spin. A
     * communicator of another kind: its size against this process's CPUs.
     */
    static boolean oversubscribed(Communicator host) {
        return host instanceof CommunicatorImpl c ? c.oversubscribed()
                : host.size() > Runtime.getRuntime().availableProcessors();
    }

    /** Whether waits never spin: the host's ranks outnumber their CPUs. */
    boolean oversubscribed() {
        return oversubscribed;
    }

    int rank() {
        return rank;
    }

    int size() {
        return size;
    }

    /** Tells {@code sender} it may write {@code byteSize} bytes at {@code offset} of the allocation {@code handle}; its
     * {@code seq}-th such notice. */
    void publishReady(int sender, long seq, byte[] handle, long offset, long byteSize) {
        long line = readyLine(rank, sender);
        block.asSlice(line + READY_HANDLE, DeviceOps.HANDLE_BYTES).copyFrom(MemorySegment.ofArray(handle));
        block.set(ValueLayout.JAVA_LONG, line + READY_OFFSET, offset);
        block.set(ValueLayout.JAVA_LONG, line + READY_BYTES, byteSize);
        LONG.setRelease(block, line, seq);
    }

    /** Waits for {@code receiver}'s {@code seq}-th ready notice to this rank and returns it. */
    Ready awaitReady(int receiver, long seq, long deadline, String what) {
        long line = readyLine(receiver, rank);
        await(receiver, line, seq, deadline, what);
        byte[] h = block.asSlice(line + READY_HANDLE, DeviceOps.HANDLE_BYTES).toArray(ValueLayout.JAVA_BYTE);
        return new Ready(h, block.get(ValueLayout.JAVA_LONG, line + READY_OFFSET),
                block.get(ValueLayout.JAVA_LONG, line + READY_BYTES));
    }

    /** Tells {@code receiver} that this rank's {@code seq}-th write into it is complete. */
    void signalDone(int receiver, long seq) {
        LONG.setRelease(block, doneLine(rank, receiver), seq);
    }

    /** Waits for {@code sender}'s {@code seq}-th done notice to this rank. */
    void awaitDone(int sender, long seq, long deadline, String what) {
        await(sender, doneLine(sender, rank), seq, deadline, what);
    }

    /** Peers waiting on this rank fail at once, naming it (a failed call leaves the sequences out of step). */
    void markFailed() {
        LONG.setRelease(block, stateLine(rank), FAILED);
    }

    private void await(int peer, long line, long seq, long deadline, String what) {
        backoff.reset();
        long nextLiveness = System.nanoTime() + LIVENESS_NANOS;
        while ((long) LONG.getAcquire(block, line) < seq) {
            long state = (long) LONG.getAcquire(block, stateLine(peer));
            if (state == CLOSED || state == FAILED) {
                throw new PeerFailedException(peer,
                        "rank " + rank + ": rank " + peer + (state == CLOSED ? " closed" : " failed")
                        + " while this rank waited for it to " + what, null);
            }
            long now = System.nanoTime();
            if (now - nextLiveness >= 0) {
                nextLiveness = now + LIVENESS_NANOS;
                long pid = block.get(ValueLayout.JAVA_LONG, pidOffset(peer));
                if (pid != 0 && pid != myPid && !ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                    throw new PeerFailedException(peer,
                            "rank " + rank + ": the process of rank " + peer + " (pid " + pid
                            + ") is gone while this rank waited for it to " + what, null);
                }
            }
            if (now - deadline >= 0) {
                throw new CollectiveTimeoutException("rank " + rank + ": rank " + peer + " did not " + what + " in time"
                        + (state == JOINING ? " (it never joined)" : ""));
            }
            backoff.idle();
        }
    }

    /** Where rank {@code r}'s process id lies in the block. */
    static long pidOffset(int r) {
        return stateLine(r) + 8;
    }

    private static long stateLine(int r) {
        return HEADER + (long) r * STATE_LINE;
    }

    private long readyLine(int receiver, int sender) {
        return HEADER + (long) size * STATE_LINE + ((long) receiver * size + sender) * READY_LINE;
    }

    private long doneLine(int sender, int receiver) {
        return HEADER + (long) size * STATE_LINE + (long) size * size * READY_LINE + ((long) sender * size + receiver)
                * DONE_LINE;
    }

    /** Marks this rank closed (unless it failed) and unmaps the block. Idempotent. */
    @Override
    public void close() {
        if (!block.scope().isAlive()) {
            return;
        }
        LONG.compareAndSet(block, stateLine(rank), ALIVE, CLOSED);
        if (arena != null) {
            arena.close();
        }
    }
}
