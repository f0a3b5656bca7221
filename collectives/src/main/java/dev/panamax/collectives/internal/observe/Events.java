package dev.panamax.collectives.internal.observe;

import dev.panamax.collectives.schedule.Problem;
import dev.panamax.collectives.schedule.Schedule;
import dev.panamax.collectives.schedule.Stage;
import dev.panamax.collectives.schedule.Step;
import dev.panamax.memory.DataType;

import java.util.TreeSet;

/**
 * Begins and commits the JFR events of the executor. When no recording has enabled an event the
 * cost is one enabled check on a shared probe instance, and nothing is allocated.
 */
public final class Events {
    /** Never committed: asks whether a recording wants the event (the check reads JFR's static settings, so it is
     * thread-safe). */
    private static final CollectiveEvent COLLECTIVE_PROBE = new CollectiveEvent();
    private static final StepEvent STEP_PROBE = new StepEvent();

    private Events() {
    }

    /** A begun collective event, or null when no recording wants it. */
    public static CollectiveEvent beginCollective() {
        if (!COLLECTIVE_PROBE.isEnabled()) {
            return null;
        }
        CollectiveEvent e = new CollectiveEvent();
        e.begin();
        return e;
    }

    /** A begun step event, or null when no recording wants it. */
    public static StepEvent beginStep() {
        if (!STEP_PROBE.isEnabled()) {
            return null;
        }
        StepEvent e = new StepEvent();
        e.begin();
        return e;
    }

    /**
     * Ends and commits {@code event} (null: nothing) for one collective or point-to-point call of
     * communicator {@code communicator}; {@code peer} is -1 for a collective; {@code failure} is
     * null when it succeeded.
     */
    public static void commit(CollectiveEvent event, long communicator, int rank, int size, String collective,
            String algorithm, long count, DataType type, int peer, Throwable failure) {
        if (event == null) {
            return;
        }
        event.end();
        if (event.shouldCommit()) {
            event.rank = rank;
            event.size = size;
            event.communicator = communicator;
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

    /**
     * Ends and commits a finished stage's event (null: nothing; a failed stage has none: the
     * collective's event carries the failure).
     */
    public static void commit(StepEvent event, long communicator, Schedule schedule, int index, Stage st,
            int elementBytes) {
        if (event == null) {
            return;
        }
        event.end();
        if (!event.shouldCommit()) {
            return;
        }
        long sent = 0;
        long received = 0;
        TreeSet<Integer> peers = new TreeSet<>();
        for (Step s : st.steps()) {
            if (s instanceof Step.Send snd) {
                sent += snd.src().count() * elementBytes;
                peers.add(snd.peer());
            } else if (s instanceof Step.Recv rcv) {
                received += rcv.dst().count() * elementBytes;
                peers.add(rcv.peer());
            }
        }
        StringBuilder b = new StringBuilder();
        for (int p : peers) {
            b.append(b.isEmpty() ? "" : ",").append(p);
        }
        Problem p = schedule.problem();
        event.rank = p.rank();
        event.communicator = communicator;
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
}
