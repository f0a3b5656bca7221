package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.MismatchedCallException;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.collectives.internal.transport.BufferAllocator;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.StringJoiner;
import java.util.Locale;

/**
 * Optional cross-rank validation: before each collective, every rank contributes a fixed-size
 * descriptor of its call (collective, type, operation, count, root, the algorithm its schedule
 * runs) to a ring all-gather, and every rank compares them. All ranks exchange the same number of
 * bytes whatever they called, so a mismatch is seen on every rank, which then throws
 * {@link MismatchedCallException} listing each rank's call. Costs one small all-gather per call.
 */
final class CallValidator {
    /** Bytes of one descriptor: 5 longs, then the algorithm's name (UTF-8, zero padded). */
    private static final int NAME_BYTES = 88;
    private static final int RECORD_BYTES = 5 * 8 + NAME_BYTES;

    private final int rank;
    private final int size;
    private final ScheduleExecutor executor;
    private final BufferAllocator allocator;
    private final Schedule exchange;
    private MemorySegment mine;
    private MemorySegment all;

    CallValidator(int rank, int size, ScheduleExecutor executor, BufferAllocator allocator) {
        this.rank = rank;
        this.size = size;
        this.executor = executor;
        this.allocator = allocator;
        this.exchange = Algorithms.get(Algorithms.RING).build(new Problem(Collective.ALL_GATHER, rank, size,
                RECORD_BYTES, 1, 0, Topology.flat(size)));
    }

    /** Exchanges this call's descriptor; throws on every rank when the calls differ. */
    void check(Schedule s, DataType type, ReduceOp op) {
        if (mine == null) {
            mine = allocator.allocate(RECORD_BYTES);
            all = allocator.allocate((long) RECORD_BYTES * size);
        }
        Problem p = s.problem();
        boolean rooted = p.collective() == Collective.BROADCAST || p.collective() == Collective.REDUCE;
        mine.fill((byte) 0);
        mine.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, p.collective().ordinal());
        mine.set(ValueLayout.JAVA_LONG_UNALIGNED, 8, p.collective() == Collective.BARRIER ? -1 : type.ordinal());
        mine.set(ValueLayout.JAVA_LONG_UNALIGNED, 16, op == null ? -1 : op.ordinal());
        mine.set(ValueLayout.JAVA_LONG_UNALIGNED, 24, p.count());
        mine.set(ValueLayout.JAVA_LONG_UNALIGNED, 32, rooted ? p.root() : -1);
        byte[] name = s.algorithm().getBytes(StandardCharsets.UTF_8);
        MemorySegment.copy(MemorySegment.ofArray(name), 0, mine, 40, Math.min(name.length, NAME_BYTES));
        executor.runSchedule(exchange, mine, all, DataType.UINT8, null);
        boolean same = true;
        for (int q = 0; q < size && same; q++) {
            same = all.asSlice((long) q * RECORD_BYTES, RECORD_BYTES).mismatch(mine) == -1;
        }
        if (!same) {
            StringJoiner j = new StringJoiner("; ");
            for (int q = 0; q < size; q++) {
                j.add("rank " + q + ": " + describe(all.asSlice((long) q * RECORD_BYTES, RECORD_BYTES)));
            }
            throw new MismatchedCallException("rank " + rank + ": the ranks' calls disagree: " + j);
        }
    }

    private static String describe(MemorySegment r) {
        Collective[] cs = Collective.values();
        int c = (int) r.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
        long type = r.get(ValueLayout.JAVA_LONG_UNALIGNED, 8);
        long op = r.get(ValueLayout.JAVA_LONG_UNALIGNED, 16);
        long count = r.get(ValueLayout.JAVA_LONG_UNALIGNED, 24);
        long root = r.get(ValueLayout.JAVA_LONG_UNALIGNED, 32);
        byte[] name = r.asSlice(40, NAME_BYTES).toArray(ValueLayout.JAVA_BYTE);
        int len = 0;
        while (len < name.length && name[len] != 0) {
            len++;
        }
        StringBuilder b = new StringBuilder(c >= 0 && c < cs.length ? cs[c].label() : "?");
        if (type >= 0 && type < DataType.values().length) {
            b.append(' ').append(DataType.values()[(int) type].canonicalName());
        }
        if (op >= 0 && op < ReduceOp.values().length) {
            b.append(' ').append(ReduceOp.values()[(int) op].name().toLowerCase(Locale.ROOT));
        }
        b.append(" count ").append(count);
        if (root >= 0) {
            b.append(" root ").append(root);
        }
        return b.append(" (").append(new String(name, 0, len, StandardCharsets.UTF_8)).append(')').toString();
    }

    /** Frees the descriptor buffers (the allocator may be closed already). */
    void close() {
        try {
            if (mine != null) {
                allocator.free(mine);
                allocator.free(all);
            }
        } catch (RuntimeException ignored) {
            // freed with the allocator
        }
        mine = null;
        all = null;
    }
}
