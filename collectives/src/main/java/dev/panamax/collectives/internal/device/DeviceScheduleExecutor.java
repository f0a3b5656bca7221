package dev.panamax.collectives.internal.device;

import dev.panamax.collectives.internal.runtime.ScheduleExecutor;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.Slice;
import dev.panamax.collectives.schedule.Stage;
import dev.panamax.collectives.schedule.Step;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.BitSet;

/**
 * Runs the same {@link Schedule}s as {@link ScheduleExecutor} on device buffers of ranks on one
 * host. The data moves by the sender writing into the receiver's memory, mapped through
 * {@link DeviceOps#open}; the receiver says where over the {@link DeviceSignals}:
 *
 * <ol>
 * <li>local steps of the stage are enqueued (copy, reduce, finish);</li>
 * <li>if the stage receives: wait for this rank's queue (nothing of it still reads or writes the
 *     areas peers will write), then for each receive tell its sender where to write: the
 *     destination slice, or for a receive that reduces, a piece of this rank's staging buffer;</li>
 * <li>for each send: wait for the receiver's notice, check the byte count, enqueue the copy into
 *     the receiver's mapped allocation; then wait for the queue and tell each receiver it is done;</li>
 * <li>for each receive: wait for the sender's notice; for a reducing one enqueue
 *     {@code dst = with op staged}.</li>
 * </ol>
 *
 * Every rank publishes all its notices before it waits for any, so the protocol cannot deadlock;
 * every wait is bounded by the timeout and fails naming the awaited rank. A stage may hold at most
 * one send and one receive per peer (the ring and halving/doubling schedules hold one), because the
 * pair's lines carry one notice each way per stage. A failed call marks this rank failed in the
 * control block: the sequences are out of step with the peers', so the executor is unusable.
 */
final class DeviceScheduleExecutor<B> implements AutoCloseable {
    private static final byte[] NO_HANDLE = new byte[DeviceOps.HANDLE_BYTES];

    private final DeviceOps<B> ops;
    private final DeviceSignals control;
    private final long timeoutNanos;
    private final int rank;
    private final int size;
    private final long[] readySent;
    private final long[] readySeen;
    private final long[] doneSent;
    private final long[] doneSeen;
    /** Scratch buffers of schedules by index, and the staging buffer for reducing receives; grown, never shrunk. */
    private final List<B> scratch = new ArrayList<>();
    private B staging;
    /** Replaced buffers stay allocated until close: peers may still have them mapped. */
    private final List<B> retired = new ArrayList<>();
    /** This rank's exported handles by allocation. */
    private final Map<B, byte[]> exported = new IdentityHashMap<>();
    /** Peers' allocations mapped here, by handle. */
    private final Map<ByteBuffer, B> mapped = new HashMap<>();
    private boolean failed;

    DeviceScheduleExecutor(DeviceOps<B> ops, DeviceSignals control, long timeoutNanos) {
        this.ops = ops;
        this.control = control;
        this.timeoutNanos = timeoutNanos;
        this.rank = control.rank();
        this.size = control.size();
        readySent = new long[size];
        readySeen = new long[size];
        doneSent = new long[size];
        doneSeen = new long[size];
    }

    int rank() {
        return rank;
    }

    int size() {
        return size;
    }

    /**
     * Runs {@code schedule} (this rank's, for a group of {@link #size()} ranks) on {@code send} and
     * {@code recv} (may be the same buffer) holding elements of {@code type}; returns when this
     * rank's part is finished on the device.
     */
    void run(Schedule schedule, B send, B recv, DataType type, ReduceOp op) {
        if (failed) {
            throw new IllegalStateException("rank " + rank
                    + ": an earlier collective failed; the GPU communicator is unusable");
        }
        if (schedule.problem().rank() != rank || schedule.problem().size() != size) {
            throw new IllegalArgumentException("schedule of rank " + schedule.problem().rank() + " of "
                    + schedule.problem().size()
                    + " run by rank " + rank + " of " + size);
        }
        try {
            run0(schedule, send, recv, type, op);
        } catch (RuntimeException | Error e) {
            failed = true;
            control.markFailed();
            throw e;
        }
    }

    private void run0(Schedule schedule, B send, B recv, DataType type, ReduceOp op) {
        int e = type.byteSize();
        List<B> buffers = new ArrayList<>();
        buffers.add(send);
        buffers.add(recv);
        for (int k = 0; k < schedule.scratchBuffers(); k++) {
            buffers.add(scratch(k, schedule.scratchCount(k) * e));
        }
        B stage = staging(stagingBytes(schedule, e));
        String call = schedule.algorithm() + " " + schedule.problem().collective().label();
        List<Stage> stages = schedule.stages();
        for (int i = 0; i < stages.size(); i++) {
            Stage st = stages.get(i);
            String where = "stage " + i + " '" + st.label() + "' of " + call;
            long deadline = System.nanoTime() + timeoutNanos;
            List<Step.Send> sends = new ArrayList<>();
            List<Step.Recv> recvs = new ArrayList<>();
            for (Step s : st.steps()) {
                switch (s) {
                    case Step.Copy c -> copy(buffers, c.src(), c.dst(), e);
                    case Step.Reduce r -> reduce(buffers, r.dst(), r.a(), r.b(), type, op, e);
                    case Step.Finish f -> {
                        if (op == ReduceOp.AVG && f.slice().count() > 0) {
                            ops.divide(type, buffers.get(f.slice().buffer()), f.slice().offset() * e, f.slice().count(),
                                    f.contributions());
                        }
                    }
                    case Step.Send snd -> sends.add(snd);
                    case Step.Recv rcv -> recvs.add(rcv);
                }
            }
            checkOnePerPeer(sends, recvs, where);
            if (!recvs.isEmpty()) {
                ops.await(remaining(deadline, where));
                long staged = 0;
                for (Step.Recv r : recvs) {
                    long bytes = r.dst().count() * e;
                    B target;
                    long offset;
                    if (r.with() == null) {
                        target = buffers.get(r.dst().buffer());
                        offset = r.dst().offset() * e;
                    } else {
                        target = stage;
                        offset = staged;
                        staged += bytes;
                    }
                    if (bytes == 0) {
                        // an empty chunk (count < ranks): nothing to map, the sender writes nothing
                        control.publishReady(r.peer(), ++readySent[r.peer()], NO_HANDLE, 0, 0);
                    } else {
                        control.publishReady(r.peer(), ++readySent[r.peer()], handle(ops.allocationOf(target)),
                                ops.offsetInAllocation(target) + offset, bytes);
                    }
                }
            }
            if (!sends.isEmpty()) {
                for (Step.Send s : sends) {
                    int peer = s.peer();
                    DeviceSignals.Ready ready = control.awaitReady(peer, ++readySeen[peer], deadline,
                            "say where to write for " + where);
                    long bytes = s.src().count() * e;
                    if (ready.byteSize() != bytes) {
                        throw new IllegalStateException("rank " + rank + ": rank " + peer + " expects "
                                + ready.byteSize()
                                + " bytes where this rank sends " + bytes + " in " + where + " (mismatched calls?)");
                    }
                    if (bytes > 0) {
                        ops.copy(buffers.get(s.src().buffer()), s.src().offset() * e, peerAllocation(ready.handle()),
                                ready.offset(), bytes);
                    }
                }
                ops.await(remaining(deadline, where));
                for (Step.Send s : sends) {
                    control.signalDone(s.peer(), ++doneSent[s.peer()]);
                }
            }
            long staged = 0;
            for (Step.Recv r : recvs) {
                int peer = r.peer();
                control.awaitDone(peer, ++doneSeen[peer], deadline, "finish writing for " + where);
                if (r.with() != null) {
                    long count = r.dst().count();
                    B dst = buffers.get(r.dst().buffer());
                    B with = buffers.get(r.with().buffer());
                    if (!sameMemory(dst, r.dst(), with, r.with(), e)) {
                        ops.copy(with, r.with().offset() * e, dst, r.dst().offset() * e, count * e);
                    }
                    if (count > 0) {
                        ops.reduce(op, type, dst, r.dst().offset() * e, stage, staged, count);
                    }
                    staged += count * e;
                }
            }
        }
        ops.await(timeoutNanos);
    }

    /** Bytes of staging the most demanding stage needs: the sum of its reducing receives. */
    private static long stagingBytes(Schedule schedule, int e) {
        long max = 0;
        for (Stage st : schedule.stages()) {
            long sum = 0;
            for (Step s : st.steps()) {
                if (s instanceof Step.Recv r && r.with() != null) {
                    sum += r.dst().count() * e;
                }
            }
            max = Math.max(max, sum);
        }
        return max;
    }

    private static void checkOnePerPeer(List<Step.Send> sends, List<Step.Recv> recvs, String where) {
        BitSet s = new BitSet();
        BitSet r = new BitSet();
        for (Step.Send x : sends) {
            if (s.get(x.peer())) {
                throw new UnsupportedOperationException("device stages take one send per peer per stage; " + where
                        + " has more to rank " + x.peer());
            }
            s.set(x.peer());
        }
        for (Step.Recv x : recvs) {
            if (r.get(x.peer())) {
                throw new UnsupportedOperationException("device stages take one receive per peer per stage; " + where
                        + " has more from rank " + x.peer());
            }
            r.set(x.peer());
        }
    }

    private long remaining(long deadline, String where) {
        return Math.max(1, deadline - System.nanoTime());
    }

    private void copy(List<B> buffers, Slice src, Slice dst, int e) {
        B s = buffers.get(src.buffer());
        B d = buffers.get(dst.buffer());
        if (src.count() == 0 || sameMemory(s, src, d, dst, e)) {
            return; // in place: the send and receive buffers are one
        }
        ops.copy(s, src.offset() * e, d, dst.offset() * e, src.count() * e);
    }

    /** {@code dst = a op b} with the device's {@code inout = op(inout, in)}: copy a to dst unless they are one. */
    private void reduce(List<B> buffers, Slice dst, Slice a, Slice b, DataType type, ReduceOp op, int e) {
        if (dst.count() == 0) {
            return;
        }
        B d = buffers.get(dst.buffer());
        if (!sameMemory(d, dst, buffers.get(a.buffer()), a, e)) {
            if (overlaps(d, dst, buffers.get(b.buffer()), b, e)) {
                throw new UnsupportedOperationException("reduce " + dst + " = " + a + " op " + b
                        + ": destination overlaps the second operand");
            }
            copy(buffers, a, dst, e);
        }
        ops.reduce(op, type, d, dst.offset() * e, buffers.get(b.buffer()), b.offset() * e, dst.count());
    }

    private boolean sameMemory(B x, Slice xs, B y, Slice ys, int e) {
        return ops.allocationOf(x) == ops.allocationOf(y)
                && ops.offsetInAllocation(x) + xs.offset() * e == ops.offsetInAllocation(y) + ys.offset() * e;
    }

    private boolean overlaps(B x, Slice xs, B y, Slice ys, int e) {
        if (ops.allocationOf(x) != ops.allocationOf(y)) {
            return false;
        }
        long x0 = ops.offsetInAllocation(x) + xs.offset() * e;
        long y0 = ops.offsetInAllocation(y) + ys.offset() * e;
        return x0 < y0 + ys.count() * e && y0 < x0 + xs.count() * e;
    }

    private B scratch(int k, long bytes) {
        while (scratch.size() <= k) {
            scratch.add(null);
        }
        B b = scratch.get(k);
        if (b == null || ops.byteSize(b) < bytes) {
            if (b != null) {
                retired.add(b);
            }
            b = ops.allocate(grown(b == null ? 0 : ops.byteSize(b), bytes));
            scratch.set(k, b);
        }
        return b;
    }

    private B staging(long bytes) {
        if (bytes == 0) {
            return staging;
        }
        if (staging == null || ops.byteSize(staging) < bytes) {
            if (staging != null) {
                retired.add(staging);
            }
            staging = ops.allocate(grown(staging == null ? 0 : ops.byteSize(staging), bytes));
        }
        return staging;
    }

    /** At least double, so that growing a buffer step by step retires few allocations. */
    private static long grown(long old, long need) {
        return Math.max(need, Math.max(4096, old * 2));
    }

    private byte[] handle(B allocation) {
        return exported.computeIfAbsent(allocation, ops::export);
    }

    private B peerAllocation(byte[] handle) {
        return mapped.computeIfAbsent(ByteBuffer.wrap(handle.clone()), h -> ops.open(handle));
    }

    /**
     * Unmaps the peers' allocations and frees this rank's scratch. Peers must not write into this
     * rank any more: the caller closes after the last collective (with a host barrier first where
     * it can).
     */
    @Override
    public void close() {
        RuntimeException first = null;
        try {
            ops.await(timeoutNanos);
        } catch (RuntimeException e) {
            first = e;
        }
        for (B m : mapped.values()) {
            try {
                ops.close(m);
            } catch (RuntimeException e) {
                first = first == null ? e : first;
            }
        }
        mapped.clear();
        List<B> mine = new ArrayList<>(retired);
        for (B b : scratch) {
            if (b != null) {
                mine.add(b);
            }
        }
        if (staging != null) {
            mine.add(staging);
        }
        for (B b : mine) {
            try {
                ops.free(b);
            } catch (RuntimeException e) {
                first = first == null ? e : first;
            }
        }
        scratch.clear();
        retired.clear();
        staging = null;
        exported.clear();
        if (first != null) {
            throw first;
        }
    }
}
