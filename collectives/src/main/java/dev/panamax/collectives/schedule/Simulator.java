package dev.panamax.collectives.schedule;

import dev.panamax.collectives.Collective;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * Runs the schedules of every rank of a problem on symbolic data and proves that they compute the
 * collective. Each element holds the set of ranks whose contribution it carries and the index of
 * the input element it stems from; a reduction of two sets that overlap (a contribution counted
 * twice), of different indices, or of an element never written is an error, and so is a final
 * buffer that differs from the collective's definition. Transfers match in FIFO order per pair of
 * ranks, as on the real links; lengths must agree; a stage waits until all of its transfers have
 * partners, so a schedule that would deadlock is reported as one. A stage whose transfers write
 * a slice that another of its transfers reads or writes is a data race and rejected.
 *
 * <p>Both the out-of-place and the in-place form of the call are simulated (in-place: the
 * send and receive buffers alias the way the collective's in-place call defines).
 */
public final class Simulator {
    private Simulator() {
    }

    /** Thrown when a schedule does not compute its collective. */
    public static final class ScheduleException extends RuntimeException {
        ScheduleException(String message) {
            super(message);
        }
    }

    /**
     * Builds every rank's schedule with {@code builder} (an algorithm's {@code build}) and checks
     * them, out of place and in place.
     */
    public static void verify(Function<Problem, Schedule> builder, Problem problem) {
        List<Schedule> all = new ArrayList<>();
        for (int r = 0; r < problem.size(); r++) {
            all.add(builder.apply(problem.atRank(r)));
        }
        verify(all, false);
        if (problem.collective() != Collective.BARRIER && problem.collective() != Collective.ALL_TO_ALL) {
            verify(all, true);
        }
    }

    /** Checks the given schedules, one per rank in rank order. */
    public static void verify(List<Schedule> schedules, boolean inPlace) {
        new Run(schedules, inPlace).run();
    }

    /**
     * True when the schedules (one per rank, in rank order) are stage-aligned: for every pair of
     * ranks, the n-th send from one to the other and the n-th receive the other posts from it (the
     * transfers that FIFO matching pairs) lie in stages of the same index. Several stage-aligned
     * schedules can run interleaved, every rank merging stage i of each (in one fixed order) into
     * one stage: matched transfers still meet in the same merged stage, so the messages on every
     * link are in the same order at both ends.
     */
    public static boolean stageAligned(List<Schedule> schedules) {
        int n = schedules.size();
        Map<Long, List<Integer>> sends = new HashMap<>();
        Map<Long, List<Integer>> recvs = new HashMap<>();
        for (int r = 0; r < n; r++) {
            List<Stage> stages = schedules.get(r).stages();
            for (int i = 0; i < stages.size(); i++) {
                for (Step s : stages.get(i).steps()) {
                    if (s instanceof Step.Send send) {
                        sends.computeIfAbsent((long) r * n + send.peer(), k -> new ArrayList<>()).add(i);
                    } else if (s instanceof Step.Recv recv) {
                        recvs.computeIfAbsent((long) recv.peer() * n + r, k -> new ArrayList<>()).add(i);
                    }
                }
            }
        }
        return sends.equals(recvs);
    }

    /** One element: contributions (bit r: rank r), the input index, scaled or not; index -1: never written. */
    private record Value(long index, long mask, boolean finished) {
        static final Value UNDEFINED = new Value(-1, 0, false);
    }

    /** A rank's buffer: a window onto a backing array (windows alias for in-place calls). */
    private record Buf(Value[] data, long offset, long length) {
        Value get(long i) {
            return data[(int) (offset + i)];
        }

        void set(long i, Value v) {
            data[(int) (offset + i)] = v;
        }
    }

    private static final class Run {
        final List<Schedule> schedules;
        final Problem problem;
        final int n;
        final boolean inPlace;
        final long fullMask;
        final Buf[][] buffers;
        final int[] stageOf;
        final boolean[] posted;
        /** Per (src, dst): queued sends (snapshots) and receives. */
        final Map<Long, ArrayDeque<Value[]>> sent = new HashMap<>();
        final Map<Long, Integer> sendsPosted = new HashMap<>();
        final Map<Long, Integer> recvsPosted = new HashMap<>();
        /** Knowledge for barriers: bit q set when this rank has heard (transitively) from q since the start. */
        final long[] heard;

        Run(List<Schedule> schedules, boolean inPlace) {
            this.schedules = schedules;
            this.problem = schedules.get(0).problem();
            this.n = problem.size();
            if (schedules.size() != n) {
                throw new IllegalArgumentException(schedules.size() + " schedules for " + n + " ranks");
            }
            if (n > 64) {
                throw new IllegalArgumentException("the simulator tracks up to 64 ranks, not " + n);
            }
            this.inPlace = inPlace;
            this.fullMask = n == 64 ? -1L : (1L << n) - 1;
            this.buffers = new Buf[n][];
            this.stageOf = new int[n];
            this.posted = new boolean[n];
            this.heard = new long[n];
            for (int r = 0; r < n; r++) {
                Schedule s = schedules.get(r);
                if (!s.problem().equals(problem.atRank(r))) {
                    throw new IllegalArgumentException("schedule " + r + " is for " + s.problem() + ", expected rank "
                            + r);
                }
                buffers[r] = initialBuffers(r, s);
                heard[r] = 1L << r;
            }
        }

        private Buf[] initialBuffers(int r, Schedule s) {
            long c = problem.count();
            long sendLen;
            long recvLen;
            switch (problem.collective()) {
                case REDUCE_SCATTER -> {
                    sendLen = c * n;
                    recvLen = c;
                }
                case ALL_GATHER -> {
                    sendLen = c;
                    recvLen = c * n;
                }
                case ALL_TO_ALL -> {
                    sendLen = c * n;
                    recvLen = c * n;
                }
                case BARRIER -> {
                    sendLen = 0;
                    recvLen = 0;
                }
                default -> {
                    sendLen = c;
                    recvLen = c;
                }
            }
            Buf[] b = new Buf[2 + s.scratchBuffers()];
            IntFunction<Value[]> fresh = len -> {
                Value[] v = new Value[len];
                Arrays.fill(v, Value.UNDEFINED);
                return v;
            };
            Value[] recv = fresh.apply((int) recvLen);
            b[Slice.RECV] = new Buf(recv, 0, recvLen);
            Buf send;
            if (!inPlace) {
                send = new Buf(fresh.apply((int) sendLen), 0, sendLen);
            } else {
                switch (problem.collective()) {
                    case REDUCE_SCATTER -> {
                        // recv is block r of send
                        Value[] whole = fresh.apply((int) sendLen);
                        send = new Buf(whole, 0, sendLen);
                        b[Slice.RECV] = new Buf(whole, r * c, c);
                    }
                    case ALL_GATHER -> send = new Buf(recv, r * c, c);
                    default -> send = new Buf(recv, 0, recvLen);
                }
            }
            b[Slice.SEND] = send;
            boolean hasInput = switch (problem.collective()) {
                case BROADCAST -> r == problem.root();
                case BARRIER -> false;
                default -> true;
            };
            if (hasInput) {
                for (long i = 0; i < sendLen; i++) {
                    long index = problem.collective() == Collective.ALL_GATHER ? r * c + i : i;
                    send.set(i, new Value(index, 1L << r, false));
                }
            }
            for (int k = 0; k < s.scratchBuffers(); k++) {
                long len = s.scratchCount(k);
                b[Slice.scratch(k)] = new Buf(fresh.apply((int) len), 0, len);
            }
            return b;
        }

        void run() {
            boolean progress = true;
            while (progress) {
                progress = false;
                for (int r = 0; r < n; r++) {
                    List<Stage> stages = schedules.get(r).stages();
                    while (stageOf[r] < stages.size()) {
                        Stage st = stages.get(stageOf[r]);
                        if (!posted[r]) {
                            post(r, st);
                            posted[r] = true;
                            progress = true;
                        }
                        if (!complete(r, st)) {
                            break;
                        }
                        finishStage(r, st);
                        stageOf[r]++;
                        posted[r] = false;
                        progress = true;
                    }
                }
            }
            StringBuilder stuck = new StringBuilder();
            for (int r = 0; r < n; r++) {
                List<Stage> stages = schedules.get(r).stages();
                if (stageOf[r] < stages.size()) {
                    stuck.append("\n  rank ").append(r).append(" in stage ").append(stageOf[r]).append(" '")
                            .append(stages.get(stageOf[r]).label()).append("'");
                }
            }
            if (!stuck.isEmpty()) {
                throw fail("deadlock: no rank can progress:" + stuck);
            }
            for (var e : sent.entrySet()) {
                if (!e.getValue().isEmpty()) {
                    throw fail("rank " + (e.getKey() >> 32) + " sent " + e.getValue().size() + " message(s) to rank "
                            + (int) (long) e.getKey() + " that were never received");
                }
            }
            checkResult();
        }

        private static long pair(int src, int dst) {
            return ((long) src << 32) | dst;
        }

        private Buf buf(int r, Slice s) {
            Buf[] b = buffers[r];
            if (s.buffer() >= b.length) {
                throw fail("rank " + r + " uses " + s + " but declares only " + (b.length - 2) + " scratch buffers");
            }
            Buf buf = b[s.buffer()];
            if (s.end() > buf.length()) {
                throw fail("rank " + r + ": " + s + " is outside the buffer of " + buf.length() + " elements");
            }
            return buf;
        }

        private Value[] read(int r, Slice s) {
            Buf b = buf(r, s);
            Value[] v = new Value[(int) s.count()];
            for (int i = 0; i < v.length; i++) {
                v[i] = b.get(s.offset() + i);
            }
            return v;
        }

        private void write(int r, Slice s, Value[] v) {
            Buf b = buf(r, s);
            for (int i = 0; i < v.length; i++) {
                b.set(s.offset() + i, v[i]);
            }
        }

        private Value combine(int r, String where, Value a, Value b) {
            if (a.index() < 0 || b.index() < 0) {
                throw fail("rank " + r + ": " + where + " reduces an element that was never written");
            }
            if (a.index() != b.index()) {
                throw fail("rank " + r + ": " + where + " reduces element " + a.index() + " with element " + b.index());
            }
            if ((a.mask() & b.mask()) != 0) {
                throw fail("rank " + r + ": " + where + " counts the contributions of ranks "
                        + ranks(a.mask() & b.mask())
                        + " twice (element " + a.index() + ")");
            }
            if (a.finished() || b.finished()) {
                throw fail("rank " + r + ": " + where + " reduces an element that was already finished (element "
                        + a.index() + ")");
            }
            return new Value(a.index(), a.mask() | b.mask(), false);
        }

        private Value[] combine(int r, String where, Value[] a, Value[] b) {
            Value[] out = new Value[a.length];
            for (int i = 0; i < a.length; i++) {
                out[i] = combine(r, where, a[i], b[i]);
            }
            return out;
        }

        private void post(int r, Stage st) {
            List<Slice> reads = new ArrayList<>();
            List<Slice> writes = new ArrayList<>();
            for (Step s : st.steps()) {
                String where = "stage '" + st.label() + "' step '" + s + "'";
                switch (s) {
                    case Step.Copy c -> write(r, c.dst(), read(r, c.src()));
                    case Step.Reduce red -> write(r, red.dst(), combine(r, where, read(r, red.a()), read(r, red.b())));
                    case Step.Finish f -> {
                        Value[] v = read(r, f.slice());
                        for (int i = 0; i < v.length; i++) {
                            if (Long.bitCount(v[i].mask()) != f.contributions() || v[i].finished()) {
                                throw fail("rank " + r + ": " + where + " finishes element " + v[i].index()
                                        + " holding "
                                        + Long.bitCount(v[i].mask()) + " contributions"
                                        + (v[i].finished() ? " (finished already)" : ""));
                            }
                            v[i] = new Value(v[i].index(), v[i].mask(), true);
                        }
                        write(r, f.slice(), v);
                    }
                    case Step.Send snd -> {
                        reads.add(snd.src());
                        sent.computeIfAbsent(pair(r, snd.peer()), k -> new ArrayDeque<>()).add(read(r, snd.src()));
                        sendsPosted.merge(pair(r, snd.peer()), 1, Integer::sum);
                    }
                    case Step.Recv rcv -> {
                        writes.add(rcv.dst());
                        if (rcv.with() != null) {
                            reads.add(rcv.with());
                        }
                        recvsPosted.merge(pair(rcv.peer(), r), 1, Integer::sum);
                    }
                }
            }
            for (int i = 0; i < writes.size(); i++) {
                Slice w = writes.get(i);
                for (int j = 0; j < writes.size(); j++) {
                    if (j != i && overlapsAliased(r, w, writes.get(j))) {
                        throw fail("rank " + r + ": stage '" + st.label() + "' receives into " + w + " and "
                                + writes.get(j) + " at once");
                    }
                }
                for (Slice rd : reads) {
                    if (overlapsAliased(r, w, rd) && !isOwnOperand(st, w, rd)) {
                        throw fail("rank " + r + ": stage '" + st.label() + "' receives into " + w + " while " + rd
                                + " is being read");
                    }
                }
            }
        }

        /** A recv-reduce may read its own destination as its operand ({@code dst = dst op in}). */
        private static boolean isOwnOperand(Stage st, Slice w, Slice rd) {
            for (Step s : st.steps()) {
                if (s instanceof Step.Recv rc && rc.dst().equals(w) && rd.equals(rc.with())) {
                    return true;
                }
            }
            return false;
        }

        private boolean overlapsAliased(int r, Slice a, Slice b) {
            Buf ba = buf(r, a);
            Buf bb = buf(r, b);
            if (ba.data() != bb.data()) {
                return false;
            }
            long a0 = ba.offset() + a.offset();
            long b0 = bb.offset() + b.offset();
            return a.count() > 0 && b.count() > 0 && a0 < b0 + b.count() && b0 < a0 + a.count();
        }

        /** Counts of transfers consumed per pair by stages already finished. */
        final Map<Long, Integer> sendsDone = new HashMap<>();
        final Map<Long, Integer> recvsDone = new HashMap<>();

        private boolean complete(int r, Stage st) {
            Map<Long, Integer> sendIdx = new HashMap<>();
            Map<Long, Integer> recvIdx = new HashMap<>();
            for (Step s : st.steps()) {
                if (s instanceof Step.Send snd) {
                    long p = pair(r, snd.peer());
                    int k = sendsDone.getOrDefault(p, 0) + sendIdx.merge(p, 1, Integer::sum);
                    if (recvsPosted.getOrDefault(p, 0) < k) {
                        return false;
                    }
                } else if (s instanceof Step.Recv rcv) {
                    long p = pair(rcv.peer(), r);
                    int k = recvsDone.getOrDefault(p, 0) + recvIdx.merge(p, 1, Integer::sum);
                    if (sendsPosted.getOrDefault(p, 0) < k) {
                        return false;
                    }
                }
            }
            return true;
        }

        private void finishStage(int r, Stage st) {
            for (Step s : st.steps()) {
                if (s instanceof Step.Send snd) {
                    sendsDone.merge(pair(r, snd.peer()), 1, Integer::sum);
                } else if (s instanceof Step.Recv rcv) {
                    long p = pair(rcv.peer(), r);
                    recvsDone.merge(p, 1, Integer::sum);
                    Value[] in = sent.get(p).poll();
                    if (in.length != rcv.dst().count()) {
                        throw fail("rank " + r + " receives " + rcv.dst().count() + " elements from rank " + rcv.peer()
                                + " (stage '" + st.label() + "') but that message has " + in.length);
                    }
                    heard[r] |= heard[rcv.peer()];
                    String where = "stage '" + st.label() + "' step '" + s + "'";
                    write(r, rcv.dst(), rcv.with() == null ? in : combine(r, where, read(r, rcv.with()), in));
                }
            }
        }

        private void checkResult() {
            long c = problem.count();
            // Every reduction is checked as if it were AVG: each element finished exactly once.
            for (int r = 0; r < n; r++) {
                Buf recv = buffers[r][Slice.RECV];
                switch (problem.collective()) {
                    case ALL_REDUCE -> expectReduced(r, recv, 0, c, 0);
                    case REDUCE -> {
                        if (r == problem.root()) {
                            expectReduced(r, recv, 0, c, 0);
                        }
                    }
                    case REDUCE_SCATTER -> expectReduced(r, recv, 0, c, r * c);
                    case ALL_GATHER -> {
                        for (long i = 0; i < c * n; i++) {
                            expect(r, recv, i, new Value(i, 1L << (i / Math.max(1, c)), false));
                        }
                    }
                    case BROADCAST -> {
                        for (long i = 0; i < c; i++) {
                            expect(r, recv, i, new Value(i, 1L << problem.root(), false));
                        }
                    }
                    case ALL_TO_ALL -> {
                        for (int q = 0; q < n; q++) {
                            for (long j = 0; j < c; j++) {
                                expect(r, recv, q * c + j, new Value(r * c + j, 1L << q, false));
                            }
                        }
                    }
                    case BARRIER -> {
                        if (heard[r] != fullMask) {
                            throw fail("barrier: rank " + r + " leaves without having heard from ranks "
                                    + ranks(fullMask & ~heard[r]));
                        }
                    }
                }
            }
        }

        private void expectReduced(int r, Buf recv, long from, long count, long firstIndex) {
            for (long i = 0; i < count; i++) {
                expect(r, recv, from + i, new Value(firstIndex + i, fullMask, true));
            }
        }

        private void expect(int r, Buf b, long i, Value want) {
            Value got = b.get(i);
            if (!got.equals(want)) {
                throw fail("rank " + r + " recv[" + i + "]" + (inPlace ? " (in place)" : "") + " holds " + show(got)
                        + ", expected " + show(want));
            }
        }

        private static String show(Value v) {
            if (v.index() < 0) {
                return "nothing";
            }
            return "element " + v.index() + " of ranks " + ranks(v.mask()) + (v.finished() ? " (finished)" : "");
        }

        private static String ranks(long mask) {
            StringBuilder b = new StringBuilder("{");
            for (int i = 0; i < 64; i++) {
                if ((mask & (1L << i)) != 0) {
                    if (b.length() > 1) {
                        b.append(',');
                    }
                    b.append(i);
                }
            }
            return b.append('}').toString();
        }

        private ScheduleException fail(String message) {
            Schedule s0 = schedules.get(0);
            return new ScheduleException(s0.problem().collective().label() + " " + s0.algorithm() + " on " + n
                    + " ranks, count "
                    + problem.count() + (inPlace ? ", in place" : "") + ": " + message);
        }
    }
}
