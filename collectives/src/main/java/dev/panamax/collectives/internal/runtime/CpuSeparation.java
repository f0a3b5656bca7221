package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.Request;
import dev.panamax.memory.internal.Libc;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Gets two ranks of one host out of taking turns on one CPU while another CPU idles or runs something else.
 *
 * <p>Two ranks that wait for each other can end up on one CPU (a wake-up placed beside the waker, a load balance while
 * a compiler thread ran): then each spins out its 50 us while the rank it waits for cannot run, and yields to it, 100
 * us per 8-byte all-reduce instead of 0.4; both stay cache-hot, so the load balancer leaves them there (scheduler
 * traces: docs/results/performance.md). Beside a CPU-bound process it is the usual state. So a wait that has lasted
 * {@link #CHECK_AFTER_NANOS} (or began in a preempted spin's penalty) publishes the CPU it runs on where same-host
 * peers read it ({@link Link#shareCpu}: in the shared-memory inbox, or, for verbs and TCP links between ranks of one
 * host, in the transport's {@code CpuBoard}), again whenever it finds itself on another one, and withdraws it when it
 * ends or parks (a parked rank takes no CPU from anyone); a rank that finds a lower rank it waits for, also waiting,
 * on the same CPU moves itself off that CPU ({@link Libc#moveOffCpu}: its affinity narrowed for the one migration,
 * then restored, so a mask the user set is kept), at most once per {@link #MIN_MOVE_INTERVAL_NANOS}. Only the higher
 * rank of a pair moves, so that the two do not swap CPUs. Not used where the ranks outnumber the CPUs (they must
 * share) or waits only spin. Not thread-safe: the wait's thread only.
 */
final class CpuSeparation {
    /** The least time between two moves of one rank. */
    static final long MIN_MOVE_INTERVAL_NANOS = 1_000_000;
    /**
     * How long a wait runs before it publishes and compares CPUs (at once in a preempted spin's penalty): past the
     * waits a running peer serves, well before the end of the spin that two ranks on one CPU each burn.
     */
    static final long CHECK_AFTER_NANOS = 5_000;

    private final int rank;
    private final MemorySegment masks = Arena.ofAuto().allocate(2 * Libc.CPU_SET_BYTES, 8);
    /** The link the published CPU went through, null while nothing is published. */
    private Link publishedOn;
    private int published = -1;
    private long lastMove;
    private boolean tried;

    CpuSeparation(int rank) {
        this.rank = rank;
    }

    /**
     * Whether a wait on the first {@code count} of {@code rs} has any pending request over a link that can share
     * CPUs: a wait on other links (TCP, verbs) skips the checks, whose every call would look at each link for nothing.
     */
    static boolean applies(Request[] rs, int count) {
        for (int i = 0; i < count; i++) {
            Request r = rs[i];
            if (r != null && !r.isDone() && r.link().canShareCpu()) {
                return true;
            }
        }
        return false;
    }

    /**
     * A wait on the first {@code count} of {@code rs} has lasted (called on each of its idles from then on, so that
     * what it publishes stays where it runs): publishes this thread's CPU and moves off it when a lower rank it waits
     * for, also waiting, published the same. Returns whether it moved.
     */
    boolean check(Request[] rs, int count, long now) {
        int cpu = Libc.currentCpu();
        if (cpu < 0) {
            return false;
        }
        for (int i = 0; i < count; i++) {
            Request r = rs[i];
            if (r == null || r.isDone()) {
                continue;
            }
            Link link = r.link();
            if (cpu != published && link.canShareCpu()) {
                link.shareCpu(cpu);
                publishedOn = link;
                published = cpu;
            }
            if (link.peer() < rank && link.peerCpu() == cpu && (!tried || now - lastMove >= MIN_MOVE_INTERVAL_NANOS)) {
                tried = true;
                lastMove = now;
                return Libc.moveOffCpu(cpu, masks);
            }
        }
        return false;
    }

    /**
     * The wait is over, or it parks from now on (it takes no CPU from a peer then): withdraws the published CPU, as a
     * stale one would make a peer move for nothing. A later {@link #check} publishes it again.
     */
    void withdraw() {
        if (publishedOn != null) {
            Link link = publishedOn;
            publishedOn = null;
            published = -1;
            try {
                link.shareCpu(-1);
            } catch (RuntimeException e) {
                // closed under the wait (an abort): no peer reads it any more
            }
        }
    }
}
