package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.internal.observe.CollectiveEvent;
import dev.panamax.collectives.internal.observe.Events;
import dev.panamax.collectives.internal.observe.StepEvent;
import dev.panamax.collectives.internal.transport.BufferRegistrar;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.Request;
import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.Slice;
import dev.panamax.collectives.schedule.Stage;
import dev.panamax.collectives.schedule.Step;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.memory.Reductions;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;

/**
 * Runs a {@link Schedule} over a communicator's links: per stage, the local steps in order, then
 * every transfer posted at once and awaited together. The same executor serves every algorithm and
 * every transport; it allocates nothing per stage beyond the segment views the links need, and
 * those it keeps from the previous call when a call repeats it (same schedule, same buffers: the
 * common case of a training loop or a benchmark). A stage's completed requests go back to their
 * links ({@link Link#recycle}), which may post them again: on shared memory a repeated small
 * collective allocates nothing at all.
 *
 * <p>It emits the JFR events {@link CollectiveEvent} (per call) and {@link StepEvent} (per stage)
 * when a recording has enabled them; otherwise the cost is one enabled check per call and per
 * stage, on a shared probe instance, and nothing is allocated.
 */
public final class ScheduleExecutor {
    private final Link[] links;
    private final ProgressLoop loop;
    private final ScratchBuffers scratch;
    private final long id;
    private MemorySegment[] buffers = new MemorySegment[2];
    private Request[] requests = new Request[8];
    /**
     * The transfer views of the last two schedules run, each with its buffers: two, because a pre-multiplied sum
     * runs two schedules per call (its scalars' all-gather, then the sum), which would evict each other from one.
     */
    private final ViewSet firstViews = new ViewSet();
    private final ViewSet secondViews = new ViewSet();
    /** The set of the call in progress (one of the two); the other is the one to empty on a miss. */
    private ViewSet views = firstViews;
    /** The next slot of {@link #views} while a stage is posted; -1 when views are not kept (concurrent runs). */
    private int viewIndex = -1;
    /** Sees each call's whole buffers before its schedule runs; null for transports that need nothing. */
    private final BufferRegistrar registrar;
    /** The pre-multiplied sum in progress: every rank's scalar by rank (null in any other call). */
    private double[] scalars;
    /** Its plan's flags, per receive step: whether the peer sends its raw input. */
    private boolean[] rawReceives;
    private int receiveIndex;
    /** This rank's scalar, which multiplies every read of its send buffer. */
    private double ownScale;
    private final LeadingView sendView = new LeadingView();
    private final LeadingView recvView = new LeadingView();
    /** The names of point-to-point calls by peer, for error messages (see {@link #pointToPointName}). */
    private final String[] sendNames;
    private final String[] recvNames;

    /**
     * @param id        the communicator's id, carried by the events
     * @param registrar the transports' hook on each call's buffers, or null
     */
    ScheduleExecutor(Link[] links, ProgressLoop loop, ScratchBuffers scratch, long id, BufferRegistrar registrar) {
        this.links = links;
        this.loop = loop;
        this.scratch = scratch;
        this.id = id;
        this.registrar = registrar;
        this.sendNames = new String[links.length];
        this.recvNames = new String[links.length];
    }

    /** The transports' hook on each call's buffers (a split communicator passes it on), or null. */
    BufferRegistrar registrar() {
        return registrar;
    }

    void runSchedule(Schedule schedule, MemorySegment send, MemorySegment recv, DataType type, ReduceOp op) {
        CollectiveEvent event = Events.beginCollective();
        Throwable failure = null;
        try {
            runStages(schedule, send, recv, type, op);
        } catch (RuntimeException | Error t) {
            failure = t;
            throw t;
        } finally {
            loop.end();
            Problem p = schedule.problem();
            Events.commit(event, id, p.rank(), p.size(), p.collective().label(), schedule.algorithm(), p.count(), type,
                    -1, failure);
        }
    }

    /**
     * Runs a pre-multiplied sum: the plan's schedule of the plain sum, with every rank's input multiplied by that
     * rank's scalar ({@code scalars}, by rank) where it is first read. Copies out of this rank's send buffer scale
     * as they copy; reductions and reducing receives that read it scale that operand as they fold
     * ({@link Reductions#scaledSum}); a slice of it that is sent goes as it is, and the receiver, knowing from the
     * plan that the message is a peer's raw input, multiplies it by that peer's scalar as it folds or copies it in.
     * No pass over the data is added. Schedules read the input only through the send buffer and count each input
     * once per output element, so each enters the result multiplied once; the result has the bits of scaling the
     * inputs first and summing them.
     */
    void runPreMulSum(PreMulPlan plan, MemorySegment send, MemorySegment recv, DataType type, double[] scalars) {
        Schedule schedule = plan.schedule();
        this.scalars = scalars;
        this.rawReceives = plan.rawReceives();
        this.ownScale = scalars[schedule.problem().rank()];
        try {
            runSchedule(schedule, send, recv, type, ReduceOp.SUM);
        } finally {
            this.scalars = null;
            this.rawReceives = null;
        }
    }

    /**
     * A point-to-point send (or receive) of the first {@code count} elements of {@code buffer} to (from) {@code peer}.
     * The completed request goes back to its link, and the view of the buffer and the name of the call are kept for
     * the next such call, so that a loop of them allocates nothing per message.
     */
    void pointToPoint(boolean isSend, int rank, int size, int peer, MemorySegment buffer, long count,
            DataType type) {
        CollectiveEvent event = Events.beginCollective();
        Throwable failure = null;
        try {
            Link link = links[peer];
            MemorySegment data = count == 0 ? MemorySegment.NULL
                    : (isSend ? sendView : recvView).of(buffer, count * type.byteSize());
            loop.begin(pointToPointName(isSend, peer), 1);
            Request r = isSend ? link.send(data) : link.recv(data, null, type, null);
            loop.await(r);
            link.recycle(r);
        } catch (RuntimeException | Error t) {
            failure = t;
            throw t;
        } finally {
            loop.end();
            Events.commit(event, id, rank, size, isSend ? "send" : "recv", "p2p", count, type, peer, failure);
        }
    }

    /** "send to rank 3", "recv from rank 3": built once per peer and direction. */
    private String pointToPointName(boolean isSend, int peer) {
        String[] names = isSend ? sendNames : recvNames;
        String name = names[peer];
        if (name == null) {
            name = (isSend ? "send to rank " : "recv from rank ") + peer;
            names[peer] = name;
        }
        return name;
    }

    /**
     * The view of the first bytes of a caller's buffer that the last send (or receive) moved, kept for the next (a
     * loop sends from the same segment object): it keeps that buffer reachable until another one replaces it.
     */
    private static final class LeadingView {
        private MemorySegment buffer;
        private long byteSize;
        private MemorySegment view;

        MemorySegment of(MemorySegment b, long bytes) {
            if (b != buffer || bytes != byteSize) {
                view = b.byteSize() == bytes ? b : b.asSlice(0, bytes);
                buffer = b;
                byteSize = bytes;
            }
            return view;
        }
    }

    private void runStages(Schedule schedule, MemorySegment send, MemorySegment recv, DataType type, ReduceOp op) {
        int e = type.byteSize();
        int nb = 2 + schedule.scratchBuffers();
        if (buffers.length < nb) {
            buffers = new MemorySegment[nb];
        }
        buffers[Slice.SEND] = send;
        buffers[Slice.RECV] = recv;
        for (int k = 0; k < schedule.scratchBuffers(); k++) {
            buffers[Slice.scratch(k)] = scratch.get(k, schedule.scratchCount(k) * e);
        }
        if (registrar != null) {
            registrar.register(buffers, nb);
        }
        keepViewsFor(schedule, nb);
        receiveIndex = 0;
        List<Stage> stages = schedule.stages();
        loop.begin(schedule.problem().collective().label(), schedule.algorithm(), stages.size());
        try {
            for (int i = 0; i < stages.size(); i++) {
                Stage st = stages.get(i);
                loop.step(i, st.label());
                StepEvent event = Events.beginStep();
                int posted = post(st, buffers, type, op, e, 0);
                if (posted > 0) {
                    loop.awaitAll(requests, posted);
                    recycleRequests(posted);
                }
                Events.commit(event, id, schedule, i, st, e);
            }
        } finally {
            Arrays.fill(buffers, null);
            viewIndex = -1;
        }
    }

    /**
     * Readies {@link #views} for a run of {@code schedule} on the first {@code nb} {@link #buffers}: the views of one
     * of the last two calls are kept when it ran the same schedule on the same buffer objects; otherwise the set the
     * last call did not use is emptied and reused. The sets keep their places (no swap), so a loop of one kind of
     * call takes the same branches every call and the JIT's profile of the warm-up still holds in a timed loop.
     */
    private void keepViewsFor(Schedule schedule, int nb) {
        if (firstViews.holds(schedule, buffers, nb)) {
            views = firstViews;
        } else if (secondViews.holds(schedule, buffers, nb)) {
            views = secondViews;
        } else {
            views = views == firstViews ? secondViews : firstViews;
            views.reset(schedule, buffers, nb);
        }
        viewIndex = 0;
    }

    /** The segment views of one schedule's transfers on one set of buffers, in transfer order. */
    private static final class ViewSet {
        private Schedule schedule;
        private MemorySegment[] buffers = new MemorySegment[2];
        private MemorySegment[] views = new MemorySegment[8];

        /** Whether these are the views of {@code s} on the first {@code nb} of {@code b} (by identity). */
        boolean holds(Schedule s, MemorySegment[] b, int nb) {
            if (s != schedule || buffers.length < nb) {
                return false;
            }
            for (int k = 0; k < nb; k++) {
                if (buffers[k] != b[k]) {
                    return false;
                }
            }
            return true;
        }

        void reset(Schedule s, MemorySegment[] b, int nb) {
            schedule = s;
            if (buffers.length < nb) {
                buffers = new MemorySegment[nb];
            }
            Arrays.fill(buffers, null);
            System.arraycopy(b, 0, buffers, 0, nb);
            Arrays.fill(views, null);
        }
    }

    /**
     * Runs several all-reduce schedules interleaved, in place on {@code data[j]} (schedule j's send
     * and receive buffer): merged stage i runs stage i of every schedule that has one, their
     * transfers posted together and awaited together, so the all-reduces share each round trip.
     * Each schedule gets its own scratch buffers. Every rank merges the same schedules in the same
     * order; the caller passes only stage-aligned schedules ({@code Simulator.stageAligned}), whose
     * matched transfers lie in stages of the same index, so the messages on every link still come
     * in the same order at both ends. With {@code scalars} (not null) they are pre-multiplied sums, as in
     * {@link #runPreMulSum}, {@code op} SUM.
     */
    void runConcurrently(PreMulPlan[] plans, MemorySegment[] data, DataType type, ReduceOp op, double[] scalars) {
        CollectiveEvent event = Events.beginCollective();
        int e = type.byteSize();
        Schedule[] schedules = new Schedule[plans.length];
        for (int j = 0; j < plans.length; j++) {
            schedules[j] = plans[j].schedule();
        }
        int[] receiveIndexes = new int[plans.length];
        if (scalars != null && plans.length > 0) {
            this.scalars = scalars;
            this.ownScale = scalars[schedules[0].problem().rank()];
        }
        MemorySegment[][] tables = new MemorySegment[schedules.length][];
        int scratchBase = 0;
        int stages = 0;
        long total = 0;
        for (int j = 0; j < schedules.length; j++) {
            Schedule s = schedules[j];
            MemorySegment[] t = new MemorySegment[2 + s.scratchBuffers()];
            t[Slice.SEND] = data[j];
            t[Slice.RECV] = data[j];
            for (int k = 0; k < s.scratchBuffers(); k++) {
                t[Slice.scratch(k)] = scratch.get(scratchBase + k, s.scratchCount(k) * e);
            }
            scratchBase += s.scratchBuffers();
            if (registrar != null) {
                registrar.register(t, t.length);
            }
            tables[j] = t;
            stages = Math.max(stages, s.stages().size());
            total += s.problem().count();
        }
        Problem first = schedules.length == 0 ? null : schedules[0].problem();
        String algorithm = "concurrent x" + schedules.length;
        Throwable failure = null;
        loop.begin("all-reduce", algorithm, stages);
        try {
            for (int i = 0; i < stages; i++) {
                loop.step(i, "merged stage " + i);
                int posted = 0;
                for (int j = 0; j < schedules.length; j++) {
                    List<Stage> own = schedules[j].stages();
                    if (i < own.size()) {
                        rawReceives = plans[j].rawReceives();
                        receiveIndex = receiveIndexes[j];
                        posted = post(own.get(i), tables[j], type, op, e, posted);
                        receiveIndexes[j] = receiveIndex;
                    }
                }
                if (posted > 0) {
                    loop.awaitAll(requests, posted);
                    recycleRequests(posted);
                }
            }
        } catch (RuntimeException | Error t) {
            failure = t;
            throw t;
        } finally {
            this.scalars = null;
            this.rawReceives = null;
            loop.end();
            if (first != null) {
                Events.commit(event, id, first.rank(), first.size(), "all-reduce", algorithm, total, type, -1, failure);
            }
        }
    }

    /**
     * Runs the local steps of stage {@code st} on {@code buffers} (indexed by slice buffer id) and
     * posts its transfers into {@link #requests} from index {@code posted}; returns the new count.
     */
    private int post(Stage st, MemorySegment[] buffers, DataType type, ReduceOp op, int e, int posted) {
        List<Step> steps = st.steps();
        for (int j = 0; j < steps.size(); j++) {
            Step s = steps.get(j);
            switch (s) {
                case Step.Copy c -> {
                    if (scaled(c.src())) {
                        Reductions.scale(type, buffers[c.dst().buffer()], c.dst().offset() * e,
                                buffers[c.src().buffer()], c.src().offset() * e, c.src().count(), ownScale);
                    } else {
                        MemorySegment.copy(buffers[c.src().buffer()], c.src().offset() * e,
                                buffers[c.dst().buffer()], c.dst().offset() * e, c.src().count() * e);
                    }
                }
                case Step.Reduce r -> {
                    if (scaled(r.a()) || scaled(r.b())) {
                        scaledReduce(r, buffers, type, e);
                    } else {
                        reduce(r, buffers, type, op, e);
                    }
                }
                case Step.Finish f -> {
                    if (op == ReduceOp.AVG) {
                        Reductions.divide(type, buffers[f.slice().buffer()], f.slice().offset() * e, f.slice().count(),
                                f.contributions());
                    }
                }
                case Step.Send snd -> {
                    ensureRequests(posted + 1);
                    requests[posted++] = links[snd.peer()].send(keptView(buffers, snd.src(), e));
                }
                case Step.Recv rcv -> {
                    ensureRequests(posted + 1);
                    MemorySegment dst = keptView(buffers, rcv.dst(), e);
                    MemorySegment with = rcv.with() == null ? null : keptView(buffers, rcv.with(), e);
                    Link link = links[rcv.peer()];
                    if (scalars != null) {
                        double incomingScale = rawReceives[receiveIndex++] ? scalars[rcv.peer()] : 1;
                        double withScale = with != null && scaled(rcv.with()) ? ownScale : 1;
                        requests[posted++] = with == null && incomingScale == 1 ? link.recv(dst, null, type, null)
                                : link.recv(dst, with, withScale, incomingScale, type, ReduceOp.SUM);
                    } else {
                        requests[posted++] = with == null ? link.recv(dst, null, type, null)
                                : link.recv(dst, with, type, op);
                    }
                }
            }
        }
        return posted;
    }

    private static void reduce(Step.Reduce r, MemorySegment[] buffers, DataType type, ReduceOp op, int e) {
        Slice d = r.dst();
        Slice a = r.a();
        Slice b = r.b();
        if (d.equals(a)) {
            Reductions.accumulate(type, op, buffers[d.buffer()], d.offset() * e, buffers[b.buffer()], b.offset() * e,
                    d.count());
        } else {
            Reductions.reduce(type, op, buffers[d.buffer()], d.offset() * e, buffers[a.buffer()], a.offset() * e,
                    buffers[b.buffer()], b.offset() * e, d.count());
        }
    }

    /** Whether reading {@code s} reads this rank's input in a pre-multiplied sum. */
    private boolean scaled(Slice s) {
        return scalars != null && s.buffer() == Slice.SEND;
    }

    /** A reduction with one or both operands from the send buffer: those are scaled as they are read. */
    private void scaledReduce(Step.Reduce r, MemorySegment[] buffers, DataType type, int e) {
        Slice a = r.a();
        Slice b = r.b();
        Reductions.scaledSum(type, buffers[r.dst().buffer()], r.dst().offset() * e, buffers[a.buffer()],
                a.offset() * e, scaled(a) ? ownScale : 1, buffers[b.buffer()], b.offset() * e,
                scaled(b) ? ownScale : 1, r.dst().count());
    }

    /** The view of {@code s}: the one kept from the last call of this schedule on these buffers, or a new one. */
    private MemorySegment keptView(MemorySegment[] buffers, Slice s, int e) {
        if (viewIndex < 0) {
            return view(buffers, s, e);
        }
        ViewSet set = views;
        if (viewIndex >= set.views.length) {
            set.views = Arrays.copyOf(set.views, 2 * set.views.length);
        }
        MemorySegment v = set.views[viewIndex];
        if (v == null) {
            v = view(buffers, s, e);
            set.views[viewIndex] = v;
        }
        viewIndex++;
        return v;
    }

    private static MemorySegment view(MemorySegment[] buffers, Slice s, int e) {
        if (s.count() == 0) {
            return MemorySegment.NULL;
        }
        return buffers[s.buffer()].asSlice(s.offset() * e, s.count() * e);
    }

    /** Hands the first {@code posted} requests, all completed, back to their links for reuse, and forgets them. */
    private void recycleRequests(int posted) {
        for (int i = 0; i < posted; i++) {
            Request r = requests[i];
            r.link().recycle(r);
            requests[i] = null;
        }
    }

    private void ensureRequests(int n) {
        if (requests.length < n) {
            requests = Arrays.copyOf(requests, Math.max(n, requests.length * 2));
        }
    }
}
