package dev.panamax.collectives.internal;

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
 */
final class ScheduleExecutor {
    private final Link[] links;
    private final Waiter waiter;
    private final Scratch scratch;
    private MemorySegment[] buffers = new MemorySegment[2];
    private Request[] requests = new Request[8];

    ScheduleExecutor(Link[] links, Waiter waiter, Scratch scratch) {
        this.links = links;
        this.waiter = waiter;
        this.scratch = scratch;
    }

    void run(Schedule schedule, MemorySegment send, MemorySegment recv, DataType type, ReduceOp op) {
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
        List<Stage> stages = schedule.stages();
        waiter.begin(schedule.problem().collective().label(), schedule.algorithm(), stages.size());
        try {
            for (int i = 0; i < stages.size(); i++) {
                Stage st = stages.get(i);
                waiter.step(i, st.label());
                List<Step> steps = st.steps();
                int posted = 0;
                for (int j = 0; j < steps.size(); j++) {
                    Step s = steps.get(j);
                    switch (s) {
                        case Step.Copy c -> MemorySegment.copy(buffers[c.src().buffer()], c.src().offset() * e,
                                buffers[c.dst().buffer()], c.dst().offset() * e, c.src().count() * e);
                        case Step.Reduce r -> reduce(r, type, op, e);
                        case Step.Finish f -> {
                            if (op == ReduceOp.AVG) {
                                Reductions.divide(type, buffers[f.slice().buffer()], f.slice().offset() * e, f.slice().count(), f.contributions());
                            }
                        }
                        case Step.Send snd -> {
                            ensureRequests(posted + 1);
                            requests[posted++] = links[snd.peer()].send(view(snd.src(), e));
                        }
                        case Step.Recv rcv -> {
                            ensureRequests(posted + 1);
                            requests[posted++] = rcv.with() == null
                                    ? links[rcv.peer()].recv(view(rcv.dst(), e), null, type, null)
                                    : links[rcv.peer()].recv(view(rcv.dst(), e), view(rcv.with(), e), type, op);
                        }
                    }
                }
                if (posted > 0) {
                    waiter.awaitAll(requests, posted);
                    Arrays.fill(requests, 0, posted, null);
                }
            }
        } finally {
            Arrays.fill(buffers, null);
        }
    }

    private void reduce(Step.Reduce r, DataType type, ReduceOp op, int e) {
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

    private MemorySegment view(Slice s, int e) {
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
