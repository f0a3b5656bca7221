package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.internal.observe.CollectiveEvent;
import dev.panamax.collectives.internal.observe.StepEvent;
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
 * every transport; it allocates nothing per stage beyond the segment views the links need.
 *
 * <p>It emits the JFR events {@link CollectiveEvent} (per call) and {@link StepEvent} (per stage)
 * when a recording has enabled them; otherwise the cost is one enabled check per call and per
 * stage, on a shared probe instance, and nothing is allocated.
 */
public final class ScheduleExecutor {
    /** Never committed: asks whether a recording wants the event (the check reads JFR's static settings, so it is thread-safe). */
    private static final CollectiveEvent COLLECTIVE_PROBE = new CollectiveEvent();
    private static final StepEvent STEP_PROBE = new StepEvent();

    private final Link[] links;
    private final ProgressLoop waiter;
    private final ScratchBuffers scratch;
    private final long id;
    private MemorySegment[] buffers = new MemorySegment[2];
    private Request[] requests = new Request[8];
    /** Sees each call's whole buffers before its schedule runs; null for transports that need nothing. */
    BufferRegistrar registrar;

    /** A transport's hook: called with a call's buffers (send, receive, scratch) before its schedule runs. */
    public interface BufferRegistrar {
        void register(MemorySegment[] buffers, int count);
    }

    /** @param id the communicator's id, carried by the events */
    ScheduleExecutor(Link[] links, ProgressLoop waiter, ScratchBuffers scratch, long id) {
        this.links = links;
        this.waiter = waiter;
        this.scratch = scratch;
        this.id = id;
    }

    void run(Schedule schedule, MemorySegment send, MemorySegment recv, DataType type, ReduceOp op) {
        CollectiveEvent event = null;
        if (COLLECTIVE_PROBE.isEnabled()) {
            event = new CollectiveEvent();
            event.begin();
        }
        Throwable failure = null;
        try {
            run0(schedule, send, recv, type, op);
        } catch (RuntimeException | Error t) {
            failure = t;
            throw t;
        } finally {
            waiter.end();
            if (event != null) {
                Problem p = schedule.problem();
                commit(event, p.rank(), p.size(), p.collective().label(), schedule.algorithm(), p.count(), type, -1, failure);
            }
        }
    }

    /** A point-to-point send (or receive) of {@code data} ({@code count} elements of {@code type}) to (from) {@code peer}. */
    void pointToPoint(boolean isSend, int rank, int size, int peer, MemorySegment data, long count, DataType type) {
        CollectiveEvent event = null;
        if (COLLECTIVE_PROBE.isEnabled()) {
            event = new CollectiveEvent();
            event.begin();
        }
        Throwable failure = null;
        try {
            if (isSend) {
                waiter.begin("send to rank " + peer, 1);
                waiter.await(links[peer].send(data));
            } else {
                waiter.begin("recv from rank " + peer, 1);
                waiter.await(links[peer].recv(data, null, type, null));
            }
        } catch (RuntimeException | Error t) {
            failure = t;
            throw t;
        } finally {
            waiter.end();
            if (event != null) {
                commit(event, rank, size, isSend ? "send" : "recv", "p2p", count, type, peer, failure);
            }
        }
    }

    private void commit(CollectiveEvent event, int rank, int size, String collective, String algorithm, long count, DataType type,
                        int peer, Throwable failure) {
        event.end();
        if (event.shouldCommit()) {
            event.rank = rank;
            event.size = size;
            event.communicator = id;
            event.collective = collective;
            event.algorithm = algorithm;
            event.count = count;
            event.bytes = count * type.byteSize();
            event.type = type.canonicalName();
            event.peer = peer;
            if (failure != null) {
                event.failed = true;
                event.error = failure.getMessage() == null ? failure.toString() : failure.getMessage();
            }
            event.commit();
        }
    }

    private void run0(Schedule schedule, MemorySegment send, MemorySegment recv, DataType type, ReduceOp op) {
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
        List<Stage> stages = schedule.stages();
        waiter.begin(schedule.problem().collective().label(), schedule.algorithm(), stages.size());
        try {
            for (int i = 0; i < stages.size(); i++) {
                Stage st = stages.get(i);
                waiter.step(i, st.label());
                StepEvent event = null;
                if (STEP_PROBE.isEnabled()) {
                    event = new StepEvent();
                    event.begin();
                }
                int posted = post(st, buffers, type, op, e, 0);
                if (posted > 0) {
                    waiter.awaitAll(requests, posted);
                    Arrays.fill(requests, 0, posted, null);
                }
                if (event != null) {
                    commit(event, schedule, i, st, e);
                }
            }
        } finally {
            Arrays.fill(buffers, null);
        }
    }

    /**
     * Runs several all-reduce schedules interleaved, in place on {@code data[j]} (schedule j's send
     * and receive buffer): merged stage i runs stage i of every schedule that has one, their
     * transfers posted together and awaited together, so the all-reduces share each round trip.
     * Each schedule gets its own scratch buffers. Every rank merges the same schedules in the same
     * order; the caller passes only stage-aligned schedules ({@code Simulator.stageAligned}), whose
     * matched transfers lie in stages of the same index, so the messages on every link still come
     * in the same order at both ends.
     */
    void runConcurrently(Schedule[] schedules, MemorySegment[] data, DataType type, ReduceOp op) {
        CollectiveEvent event = null;
        if (COLLECTIVE_PROBE.isEnabled()) {
            event = new CollectiveEvent();
            event.begin();
        }
        int e = type.byteSize();
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
        waiter.begin("all-reduce", algorithm, stages);
        try {
            for (int i = 0; i < stages; i++) {
                waiter.step(i, "merged stage " + i);
                int posted = 0;
                for (int j = 0; j < schedules.length; j++) {
                    List<Stage> own = schedules[j].stages();
                    if (i < own.size()) {
                        posted = post(own.get(i), tables[j], type, op, e, posted);
                    }
                }
                if (posted > 0) {
                    waiter.awaitAll(requests, posted);
                    Arrays.fill(requests, 0, posted, null);
                }
            }
        } catch (RuntimeException | Error t) {
            failure = t;
            throw t;
        } finally {
            waiter.end();
            if (event != null && first != null) {
                commit(event, first.rank(), first.size(), "all-reduce", algorithm, total, type, -1, failure);
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
                case Step.Copy c -> MemorySegment.copy(buffers[c.src().buffer()], c.src().offset() * e,
                        buffers[c.dst().buffer()], c.dst().offset() * e, c.src().count() * e);
                case Step.Reduce r -> reduce(r, buffers, type, op, e);
                case Step.Finish f -> {
                    if (op == ReduceOp.AVG) {
                        Reductions.divide(type, buffers[f.slice().buffer()], f.slice().offset() * e, f.slice().count(), f.contributions());
                    }
                }
                case Step.Send snd -> {
                    ensureRequests(posted + 1);
                    requests[posted++] = links[snd.peer()].send(view(buffers, snd.src(), e));
                }
                case Step.Recv rcv -> {
                    ensureRequests(posted + 1);
                    requests[posted++] = rcv.with() == null
                            ? links[rcv.peer()].recv(view(buffers, rcv.dst(), e), null, type, null)
                            : links[rcv.peer()].recv(view(buffers, rcv.dst(), e), view(buffers, rcv.with(), e), type, op);
                }
            }
        }
        return posted;
    }

    /** Commits a finished stage's event (a failed stage has none: the collective's event carries the failure). */
    private void commit(StepEvent event, Schedule schedule, int index, Stage st, int e) {
        event.end();
        if (!event.shouldCommit()) {
            return;
        }
        long sent = 0;
        long received = 0;
        java.util.TreeSet<Integer> peers = new java.util.TreeSet<>();
        for (Step s : st.steps()) {
            if (s instanceof Step.Send snd) {
                sent += snd.src().count() * e;
                peers.add(snd.peer());
            } else if (s instanceof Step.Recv rcv) {
                received += rcv.dst().count() * e;
                peers.add(rcv.peer());
            }
        }
        StringBuilder b = new StringBuilder();
        for (int p : peers) {
            b.append(b.isEmpty() ? "" : ",").append(p);
        }
        Problem p = schedule.problem();
        event.rank = p.rank();
        event.communicator = id;
        event.collective = p.collective().label();
        event.algorithm = schedule.algorithm();
        event.stage = index;
        event.stages = schedule.stages().size();
        event.label = st.label();
        event.peers = b.toString();
        event.bytesSent = sent;
        event.bytesReceived = received;
        event.commit();
    }

    private static void reduce(Step.Reduce r, MemorySegment[] buffers, DataType type, ReduceOp op, int e) {
        Slice d = r.dst();
        Slice a = r.a();
        Slice b = r.b();
        if (d.equals(a)) {
            Reductions.accumulate(type, op, buffers[d.buffer()], d.offset() * e, buffers[b.buffer()], b.offset() * e, d.count());
        } else {
            Reductions.reduce(type, op, buffers[d.buffer()], d.offset() * e, buffers[a.buffer()], a.offset() * e,
                    buffers[b.buffer()], b.offset() * e, d.count());
        }
    }

    private static MemorySegment view(MemorySegment[] buffers, Slice s, int e) {
        if (s.count() == 0) {
            return MemorySegment.NULL;
        }
        return buffers[s.buffer()].asSlice(s.offset() * e, s.count() * e);
    }

    private void ensureRequests(int n) {
        if (requests.length < n) {
            requests = Arrays.copyOf(requests, Math.max(n, requests.length * 2));
        }
    }
}
