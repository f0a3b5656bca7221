package dev.panamax.ml.shared;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.Communicator;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.Reductions;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;

/**
 * The shared variables of one communicator in this process, and the thread that runs their
 * global all-reduces.
 *
 * <p>Rounds become ready locally in an order that differs between processes, but collectives must
 * be issued in one order everywhere. So before each all-reduce the processes all-gather a small
 * descriptor of the round each would run next, and all run rank 0's choice, waiting for it locally
 * if needed; the descriptors also let every process check the lengths and reductions and count
 * the tasks (for AVG). A round that failed locally still takes part, so that every process fails
 * it together instead of timing out.
 */
final class Coordinator {
    /** Descriptor: key hash, round, length, tasks, reduction code, failed flag, key length, then the key's first bytes.
     * */
    private static final int DESCRIPTOR_LONGS = 16;
    private static final int KEY_LONGS = DESCRIPTOR_LONGS - 7;

    private static final Map<Communicator, Coordinator> ALL = new IdentityHashMap<>();

    private final Communicator comm;
    // Guarded by this.
    private final Map<String, Slot> slots = new LinkedHashMap<>();
    private final ArrayDeque<RoundState> ready = new ArrayDeque<>();
    private boolean running;
    private Throwable broken;

    private Coordinator(Communicator comm) {
        this.comm = comm;
    }

    /** Creates or joins the variable {@code key} on {@code comm}. */
    static Slot init(Communicator comm, String key, int numTasks, SharedReduction reduction) {
        synchronized (ALL) {
            Coordinator c = ALL.computeIfAbsent(comm, Coordinator::new);
            synchronized (c) {
                Slot slot = c.slots.get(key);
                if (slot == null) {
                    slot = new Slot(c, key, numTasks, reduction);
                    c.slots.put(key, slot);
                } else if (!slot.matches(numTasks, reduction)) {
                    throw new IllegalArgumentException("shared variable '" + key + "' exists on rank " + comm.rank()
                            + " with numTasks "
                            + slot.numTasks() + " and " + slot.reduction() + "; init asked for numTasks " + numTasks
                            + " and " + reduction);
                }
                return slot;
            }
        }
    }

    /** The variable {@code key} on {@code comm}, or an error naming the known keys. */
    static Slot lookup(Communicator comm, String key) {
        synchronized (ALL) {
            Coordinator c = ALL.get(comm);
            List<String> known = List.of();
            if (c != null) {
                synchronized (c) {
                    Slot slot = c.slots.get(key);
                    if (slot != null) {
                        return slot;
                    }
                    known = new ArrayList<>(c.slots.keySet());
                }
            }
            throw new NoSuchElementException("no shared variable '" + key + "' on rank " + comm.rank()
                    + " of this communicator"
                    + " (init it first); known keys: " + known);
        }
    }

    void remove(Slot slot) {
        synchronized (ALL) {
            synchronized (this) {
                slots.remove(slot.key(), slot);
                forgetIfIdle();
            }
        }
    }

    /** Drops this coordinator once it has no variables and no work (called with both locks held). */
    private void forgetIfIdle() {
        if (slots.isEmpty() && ready.isEmpty() && !running) {
            ALL.remove(comm, this);
        }
    }

    /** A round has all its commits folded (or failed folding): queue its global step. */
    void localReady(RoundState round) {
        synchronized (this) {
            if (broken != null) {
                round.fail(new CollectiveException("the shared variables of this communicator stopped after an "
                        + "earlier failure: "
                        + broken.getMessage(), broken));
                return;
            }
            ready.add(round);
            notifyAll();
            if (running) {
                return;
            }
            running = true;
        }
        Thread.ofPlatform().daemon().name("panamax-shared-allreduce-" + comm.rank()).start(this::work);
    }

    private void work() {
        while (true) {
            RoundState head;
            synchronized (this) {
                head = ready.peek();
                if (head == null) {
                    running = false;
                    break;
                }
            }
            try {
                step(head);
            } catch (RuntimeException | Error e) {
                breakAll(e);
                break;
            }
        }
        synchronized (ALL) {
            synchronized (this) {
                forgetIfIdle();
            }
        }
    }

    /** Runs one global step, for {@code head} or for the round rank 0 chose. */
    private void step(RoundState head) {
        if (comm.size() == 1) {
            if (!head.isFailed()) {
                finish(head, head.slot().numTasks());
            }
            dequeue(head);
            return;
        }
        long[][] proposals = allGather(descriptor(head));
        long[] chosen = proposals[0];
        RoundState round = sameRound(chosen, descriptor(head)) ? head : awaitLocal(chosen);
        long[][] table = proposals;
        if (!allEqual(proposals)) {
            table = allGather(descriptor(round));
        }
        try {
            String problem = disagreement(table, round);
            if (problem != null) {
                Throwable local = round.failure();
                round.fail(local != null ? local : new CollectiveException(round + ": " + problem));
                return;
            }
            int totalTasks = 0;
            for (long[] d : table) {
                totalTasks += (int) d[3];
            }
            globalReduce(round);
            finish(round, totalTasks);
        } finally {
            dequeue(round);
        }
    }

    private synchronized void dequeue(RoundState round) {
        ready.remove(round);
    }

    private void finish(RoundState round, int totalTasks) {
        if (round.slot().reduction() instanceof SharedReduction.Operator(DataType type, ReduceOp op) && op
                == ReduceOp.AVG) {
            Reductions.divide(type, round.accumulator(), 0, round.length(), totalTasks);
        }
        round.complete();
    }

    /** Why the processes cannot reduce this round together, or null when they agree. */
    private static String disagreement(long[][] table, RoundState round) {
        StringBuilder failed = new StringBuilder();
        for (int q = 0; q < table.length; q++) {
            if (table[q][5] != 0) {
                failed.append(failed.isEmpty() ? "" : ", ").append(q);
            }
        }
        if (!failed.isEmpty()) {
            return "it failed on rank(s) " + failed + " while reducing the tasks' vectors there";
        }
        if (Arrays.stream(table).anyMatch(d -> d[2] != table[0][2])) {
            return "the processes committed vectors of different lengths " + column(table, 2);
        }
        if (Arrays.stream(table).anyMatch(d -> d[4] != table[0][4])) {
            return "the processes initialized it with different reductions (" + round.slot().reduction()
                    + " on this rank; codes "
                    + column(table, 4) + ")";
        }
        return null;
    }

    private static String column(long[][] table, int index) {
        StringBuilder b = new StringBuilder("(");
        for (int q = 0; q < table.length; q++) {
            b.append(q == 0 ? "" : ", ").append("rank ").append(q).append(": ").append(table[q][index]);
        }
        return b.append(')').toString();
    }

    /** The all-reduce itself, in place on the accumulator. */
    private void globalReduce(RoundState round) {
        long n = round.length();
        if (n == 0) {
            return;
        }
        MemorySegment acc = round.accumulator();
        SharedReduction reduction = round.slot().reduction();
        if (reduction instanceof SharedReduction.Operator(DataType type, ReduceOp op)) {
            comm.allReduce(acc, n, type, op.accumulating());
            return;
        }
        // A function the communicator does not know: exchange blocks (all-to-all), reduce this
        // rank's block in rank order, all-gather the reduced blocks.
        DataType type = reduction.type();
        int p = comm.size();
        long block = (n + p - 1) / p;
        long blockBytes = block * type.byteSize();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment send = arena.allocate(p * blockBytes, 64);
            MemorySegment recv = arena.allocate(p * blockBytes, 64);
            MemorySegment.copy(acc, 0, send, 0, acc.byteSize());
            comm.allToAll(send, recv, block, type);
            MemorySegment mine = recv.asSlice(0, blockBytes);
            for (int q = 1; q < p; q++) {
                Kernels.fold(reduction, mine, recv.asSlice(q * blockBytes, blockBytes));
            }
            comm.allGather(mine, send, block, type);
            MemorySegment.copy(send, 0, acc, 0, acc.byteSize());
        }
    }

    /** Waits until the round that {@code chosen} describes is ready here (rank 0 runs it next). */
    private synchronized RoundState awaitLocal(long[] chosen) {
        long deadline = System.nanoTime() + comm.timeoutNanos();
        while (true) {
            for (RoundState r : ready) {
                if (sameRound(chosen, descriptor(r))) {
                    return r;
                }
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new CollectiveTimeoutException("rank 0 runs round " + chosen[1] + " of shared variable '"
                        + keyOf(chosen)
                        + "' next, but its tasks on rank " + comm.rank() + " did not all commit within "
                        + comm.timeoutNanos() / 1_000_000 + " ms");
            }
            try {
                wait(Math.max(1, left / 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CollectiveException("interrupted while waiting for round " + chosen[1]
                        + " of shared variable '"
                        + keyOf(chosen) + "'", e);
            }
        }
    }

    private void breakAll(Throwable cause) {
        List<RoundState> failed;
        synchronized (this) {
            broken = cause;
            failed = new ArrayList<>(ready);
            ready.clear();
            running = false;
        }
        for (RoundState r : failed) {
            r.fail(cause);
        }
    }

    private long[][] allGather(long[] mine) {
        int p = comm.size();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment send = arena.allocateFrom(ValueLayout.JAVA_LONG, mine);
            MemorySegment recv = arena.allocate(ValueLayout.JAVA_LONG, (long) p * DESCRIPTOR_LONGS);
            comm.allGather(send, recv, DESCRIPTOR_LONGS, DataType.INT64);
            long[][] out = new long[p][];
            for (int q = 0; q < p; q++) {
                out[q] = recv.asSlice((long) q * DESCRIPTOR_LONGS * Long.BYTES, DESCRIPTOR_LONGS * Long.BYTES)
                        .toArray(ValueLayout.JAVA_LONG);
            }
            return out;
        }
    }

    private static long[] descriptor(RoundState round) {
        long[] d = new long[DESCRIPTOR_LONGS];
        byte[] key = round.slot().key().getBytes(StandardCharsets.UTF_8);
        d[0] = fnv1a(key);
        d[1] = round.number();
        d[2] = round.length();
        d[3] = round.slot().numTasks();
        d[4] = reductionCode(round.slot().reduction());
        d[5] = round.isFailed() ? 1 : 0;
        d[6] = key.length;
        byte[] prefix = Arrays.copyOf(key, KEY_LONGS * Long.BYTES);
        MemorySegment.copy(MemorySegment.ofArray(prefix), ValueLayout.JAVA_LONG_UNALIGNED, 0, d, 7, KEY_LONGS);
        return d;
    }

    /** Same variable (hash, key length and prefix) and same round number. */
    private static boolean sameRound(long[] a, long[] b) {
        return a[0] == b[0] && a[1] == b[1] && Arrays.equals(a, 6, DESCRIPTOR_LONGS, b, 6, DESCRIPTOR_LONGS);
    }

    private static boolean allEqual(long[][] table) {
        for (long[] d : table) {
            if (!Arrays.equals(d, table[0])) {
                return false;
            }
        }
        return true;
    }

    private static String keyOf(long[] d) {
        byte[] prefix = new byte[KEY_LONGS * Long.BYTES];
        MemorySegment.copy(d, 7, MemorySegment.ofArray(prefix), ValueLayout.JAVA_LONG_UNALIGNED, 0, KEY_LONGS);
        int len = (int) Math.min(d[6], prefix.length);
        return new String(prefix, 0, len, StandardCharsets.UTF_8) + (d[6] > prefix.length ? "..." : "");
    }

    private static long reductionCode(SharedReduction r) {
        return switch (r) {
            case SharedReduction.Operator(DataType type, ReduceOp op) -> 100L * type.ordinal() + op.ordinal();
            case SharedReduction.DoubleFunction f -> 10_000;
            case SharedReduction.FloatFunction f -> 10_001;
        };
    }

    private static long fnv1a(byte[] bytes) {
        long h = 0xcbf29ce484222325L;
        for (byte b : bytes) {
            h = (h ^ (b & 0xff)) * 0x100000001b3L;
        }
        return h;
    }
}
