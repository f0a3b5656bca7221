package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.RevokedException;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.Request;
import dev.panamax.memory.concurrent.AdaptiveBackoffIdleStrategy;
import dev.panamax.memory.concurrent.AdaptiveBackoffIdleStrategy.Phase;
import dev.panamax.memory.concurrent.IdleStrategies;
import dev.panamax.memory.concurrent.WakeSignal;

import java.util.StringJoiner;
import java.util.Arrays;
import java.util.Locale;

/**
 * Drives posted requests to completion on the calling thread, with the communicator's timeout,
 * peer-liveness checks while idle, and an abort flag. Names the collective, the step and the
 * requests still pending when it gives up (in the exception, and in one WARNING line of the
 * {@code dev.panamax.collectives} System.Logger). One per communicator; used by one thread at a time.
 *
 * <p>What it is doing is also readable from other threads through {@link #inFlight()} (the JMX
 * bean's {@code InFlight}): the running thread writes plain fields, without fences, and the reader
 * reads them racily, so a snapshot may mix two consecutive stages or miss a just-posted request.
 * That is enough to name a stuck rank's collective, stage and peers (which do not change while it
 * is stuck) and costs the collective nothing.
 */
public final class ProgressLoop {
    private static final long LIVENESS_CHECK_NANOS = 50_000_000L;
    private static final System.Logger LOG = System.getLogger("dev.panamax.collectives");

    private final int rank;
    private final Link[] links;
    private final long timeoutNanos;
    private final AdaptiveBackoffIdleStrategy backoff;
    /** {@code PANAMAX_WAIT=spin}: waits never yield, sleep or park. */
    private final boolean spinOnly;
    /** Null where ranks must share CPUs (oversubscribed) or never yield (spin only). */
    private final CpuSeparation separation;
    private volatile String abortReason;
    /** The rank that revoked the communicator, or -1; set before {@link #abortReason}. */
    private volatile int revokedBy = -1;

    private String collective = "?";
    /** Appended in parentheses to the collective's name in messages (built only when one is thrown). */
    private String detail;
    private int step;
    private int steps;
    private String stepLabel;
    /**
     * Whether the running collective woke a sleeping peer: its waits spin, rather than yield, for their first
     * {@link AdaptiveBackoffIdleStrategy#WOKEN_PEER_SPIN_NANOS} (see there).
     */
    private boolean wokePeer;
    /** Whether a collective is running (between begin and end). */
    private boolean active;
    /** The requests of the wait in progress, published once it has had to idle (racy reads only). */
    private Request[] waiting;
    private int waitingCount;
    /** System.nanoTime() when the wait in progress first found a request pending; 0 when none. */
    private long waitSince;

    ProgressLoop(int rank, long timeoutNanos, boolean oversubscribed) {
        this(rank, timeoutNanos, oversubscribed, false, new Link[0]);
    }

    /**
     * {@code spinOnly}: every wait spins until served ({@code PANAMAX_WAIT=spin}); {@code links}: every link of the
     * communicator, checked while idle besides those of the pending requests.
     */
    ProgressLoop(int rank, long timeoutNanos, boolean oversubscribed, boolean spinOnly, Link[] links) {
        this.rank = rank;
        this.links = links;
        this.timeoutNanos = timeoutNanos;
        this.backoff = IdleStrategies.adaptiveBackoff(oversubscribed);
        this.spinOnly = spinOnly;
        this.separation = oversubscribed || spinOnly ? null : new CpuSeparation(rank);
    }


    /** Names the running collective for error messages. */
    void begin(String collective, int steps) {
        begin(collective, null, steps);
    }

    /** Names the running collective and its algorithm ({@code allreduce(ring)}) for error messages. */
    void begin(String collective, String detail, int steps) {
        this.collective = collective;
        this.detail = detail;
        this.steps = steps;
        this.step = 0;
        this.stepLabel = null;
        this.active = true;
    }

    /** The collective has ended (or failed). */
    void end() {
        this.active = false;
        this.wokePeer = false;
        this.waitSince = 0;
        this.waiting = null;
    }

    /** The running collective woke a sleeping peer (see {@link AdaptiveBackoffIdleStrategy#WOKEN_PEER_SPIN_NANOS}). */
    void wokeSleepingPeer() {
        wokePeer = true;
    }

    void step(int step) {
        this.step = step;
        this.stepLabel = null;
    }

    /** Enters step {@code step}, described by {@code label} in error messages. */
    void step(int step, String label) {
        this.step = step;
        this.stepLabel = label;
    }

    /** Makes every current and later wait fail with {@code reason}. */
    void abort(String reason) {
        abortReason = reason;
    }

    /** Makes every current and later wait fail with a {@link RevokedException} naming {@code revoker}. */
    void revoke(int revoker) {
        revokedBy = revoker;
        abortReason = "revoked by rank " + revoker;
    }

    private final Request[] few = new Request[4];

    void await(Request a) {
        awaitAll(a, null, null, null);
    }

    void await(Request a, Request b) {
        awaitAll(a, b, null, null);
    }

    /** Waits for up to four requests (null entries are ignored), which covers every ring and tree step. */
    void awaitAll(Request a, Request b, Request c, Request d) {
        few[0] = a;
        few[1] = b;
        few[2] = c;
        few[3] = d;
        try {
            awaitAll(few, 4);
        } finally {
            Arrays.fill(few, null);
        }
    }

    /**
     * Waits for the first {@code count} requests of {@code rs} (null entries are ignored), polling
     * all of them in every round: a peer may need any of them to progress before it can serve us.
     */
    void awaitAll(Request[] rs, int count) {
        try {
            pollUntilDone(rs, count);
        } finally {
            if (separation != null) {
                separation.withdraw(); // also when the wait fails: a published CPU left behind misleads the peer
            }
        }
    }

    private void pollUntilDone(Request[] rs, int count) {
        long start = 0;
        long lastCheck = 0;
        long now = 0;
        int idleRounds = 0;
        WakeSignal wakeSignal = null;
        boolean separable = false;
        backoff.reset();
        while (true) {
            boolean progressed = false;
            boolean all = true;
            try {
                for (int i = 0; i < count; i++) {
                    Request r = rs[i];
                    if (r != null && !r.isDone()) {
                        if (r.poll()) {
                            progressed = true;
                        } else {
                            all = false;
                        }
                    }
                }
            } catch (RuntimeException e) {
                throw abortedOr(e);
            }
            if (all) {
                if (start != 0) {
                    waitSince = 0;
                    waiting = null;
                    backoff.waitEnded();
                }
                return;
            }
            if (progressed) {
                backoff.reset();
            }
            String reason = abortReason;
            if (reason != null) {
                throw abortedOr(null);
            }
            // The clock serves only the liveness, timeout and CPU checks: while spinning it is read every few
            // rounds, since on some machines a read costs more than a poll (a virtual machine's HPET clock source
            // takes microseconds); a round that yields or sleeps reads it every time.
            boolean clockRound = (idleRounds++ & (AdaptiveBackoffIdleStrategy.CLOCK_EVERY - 1)) == 0;
            if (clockRound || backoff.phase() != Phase.SPINNING) {
                now = System.nanoTime();
            }
            if (start == 0) {
                start = now;
                lastCheck = now;
                waiting = rs;
                waitingCount = count;
                waitSince = now;
                wakeSignal = commonWakeSignal(rs, count);
                separable = separation != null && CpuSeparation.applies(rs, count);
                backoff.allowLongerSpin(allOnSharedMemory(rs, count));
            } else if (now - lastCheck > LIVENESS_CHECK_NANOS) {
                lastCheck = now;
                try {
                    checkPeers(rs, count);
                } catch (RuntimeException e) {
                    throw abortedOr(e);
                }
                if (now - start > timeoutNanos) {
                    String message = "rank " + rank + ": " + name() + " step " + (step + 1) + "/" + steps
                            + (stepLabel != null ? " (" + stepLabel + ")" : "") + " timed out after "
                            + String.format("%.1f", timeoutNanos / 1e9) + " s waiting for: " + pending(rs, count);
                    LOG.log(System.Logger.Level.WARNING, message);
                    throw new CollectiveTimeoutException(message);
                }
            }
            if (spinOnly) {
                backoff.spin();
            } else {
                if (separable && backoff.phase() == Phase.PARKING) {
                    // Parked or asleep, this rank takes no CPU from the peer: a CPU left published would only move a
                    // peer that spins beside it for nothing (large verbs broadcasts in the RDMA VM: 1.4 moves a call).
                    separation.withdraw();
                } else if (separable && (now - start >= CpuSeparation.CHECK_AFTER_NANOS || backoff.inPenalty(now))) {
                    boolean moved;
                    try {
                        moved = separation.check(rs, count, now);
                    } catch (RuntimeException e) {
                        throw abortedOr(e);
                    }
                    if (moved) {
                        backoff.movedOffSharedCpu();
                    }
                }
                // A peer this collective woke is still waking (spinning loses nothing to it, see the constant).
                boolean spinInstead = wokePeer && now - start < AdaptiveBackoffIdleStrategy.WOKEN_PEER_SPIN_NANOS;
                backoff.idle(wakeSignal, spinInstead);
            }
        }
    }

    /**
     * Whether every pending request is on a shared-memory link ({@link Link#isSharedMemory()}): only such waits
     * may learn a spin longer than the shortest (measured to pay while a shared-memory peer copies or reduces a large
     * message's part; over verbs in a virtual machine it did not, docs/results/performance.md).
     */
    private static boolean allOnSharedMemory(Request[] rs, int count) {
        for (int i = 0; i < count; i++) {
            Request r = rs[i];
            if (r != null && !r.isDone() && !r.link().isSharedMemory()) {
                return false;
            }
        }
        return true;
    }

    /**
     * The wake signal that all the pending requests' links share (the shared-memory inbox's doorbell, the RDMA
     * domain's completion channel), on which the wait can sleep until the peer's write or the adapter wakes it; null
     * when some link has none or they differ (the wait then polls).
     */
    private static WakeSignal commonWakeSignal(Request[] rs, int count) {
        WakeSignal common = null;
        for (int i = 0; i < count; i++) {
            Request r = rs[i];
            if (r != null && !r.isDone()) {
                WakeSignal d = r.link().wakeSignal();
                if (d == null || (common != null && d != common)) {
                    return null;
                }
                common = d;
            }
        }
        return common;
    }

    /**
     * What is running now, for monitoring: "allreduce(ring) step 1/3 (reduce-scatter step 1/1),
     * waiting 2.5 s for: receive of 4096 bytes from rank 1 over shm (0 received)"; empty when idle.
     * Reads the running thread's fields racily (see the class comment).
     */
    public String inFlight() {
        if (!active) {
            return "";
        }
        String label = stepLabel;
        StringBuilder b = new StringBuilder(name()).append(" step ").append(step + 1).append('/').append(steps);
        if (label != null) {
            b.append(" (").append(label).append(')');
        }
        long since = waitSince;
        Request[] rs = waiting;
        int count = Math.min(waitingCount, rs == null ? 0 : rs.length);
        if (since != 0 && rs != null) {
            String pending;
            try {
                pending = pending(rs, count);
            } catch (RuntimeException e) {
                pending = "?"; // the requests changed under us
            }
            b.append(String.format(Locale.ROOT, ", waiting %.1f s for: ", (System.nanoTime() - since) / 1e9))
                    .append(pending);
        }
        return b.toString();
    }

    /** How this communicator's waits idled so far, for monitoring (the JMX bean). Racy reads. */
    public AdaptiveBackoffIdleStrategy.Counts waits() {
        return backoff.counts();
    }

    /**
     * An abort closes the links under a waiting thread, whose polls then fail (a closed socket, a
     * closed link): such a failure is reported as the abort it is.
     */
    private RuntimeException abortedOr(RuntimeException e) {
        String reason = abortReason;
        if (reason == null) {
            return e;
        }
        int revoker = revokedBy;
        if (revoker >= 0) {
            RevokedException r = new RevokedException(revoker, "rank " + rank + ": " + name()
                    + ": the communicator was revoked by rank " + revoker);
            if (e != null) {
                r.initCause(e);
            }
            return r;
        }
        return new CollectiveException("rank " + rank + ": " + name() + " aborted: " + reason, e);
    }

    private String name() {
        return detail == null ? collective : collective + "(" + detail + ")";
    }

    /**
     * The peers of the pending requests first (the most telling error), then every other peer: a
     * collective needs them all, and the rank we wait on may itself be stuck behind a frozen one.
     */
    private void checkPeers(Request[] rs, int count) {
        for (int i = 0; i < count; i++) {
            Request r = rs[i];
            if (r != null && !r.isDone()) {
                r.link().checkPeer();
            }
        }
        for (Link l : links) {
            if (l != null) {
                l.checkPeer();
            }
        }
    }

    private static String pending(Request[] rs, int count) {
        StringJoiner j = new StringJoiner("; ");
        for (int i = 0; i < count; i++) {
            Request r = rs[i];
            if (r != null && !r.isDone()) {
                j.add(r.describe());
            }
        }
        return j.toString();
    }
}
