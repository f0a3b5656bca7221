package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.Request;
import dev.panamax.collectives.internal.transport.TestLink;
import dev.panamax.memory.internal.Libc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** Which waits publish their CPU, and which move off a CPU they share with the rank they wait for. */
@EnabledOnOs(OS.LINUX)
class CpuSeparationTest {
    /** A link to {@code peer} that reports the peer's published CPU as told and records what this rank published. */
    private static class CpuLink extends TestLink {
        int peerCpu = -1;
        /** False for a link to a rank in another host or over TCP. */
        boolean canShare = true;
        /** Every CPU this rank published, in order (-1: withdrawn). */
        final List<Integer> publications = new ArrayList<>();
        /** A request {@link #doProgress} completes once {@link #completeAtNanos} has passed; null when none. */
        Request pending;
        long completeAtNanos;

        CpuLink(int peer) {
            super(peer);
        }

        @Override
        public boolean canShareCpu() {
            return canShare;
        }

        @Override
        public void shareCpu(int cpu) {
            publications.add(cpu);
        }

        /** The CPU published last (-1: withdrawn), or -2 when nothing was. */
        int shared() {
            return publications.isEmpty() ? -2 : publications.getLast();
        }

        @Override
        public int peerCpu() {
            return peerCpu;
        }

        @Override
        protected void doProgress() {
            if (pending != null && System.nanoTime() - completeAtNanos >= 0) {
                pending.complete();
            }
        }
    }

    /** The CPU this thread runs on; skips the test where that is unknown or fewer than {@code cpus} are usable. */
    private static int currentCpu(int cpus) {
        int cpu = Libc.currentCpu();
        assumeTrue(cpu >= 0 && Runtime.getRuntime().availableProcessors() >= cpus,
                "needs sched_getcpu and " + cpus + " CPU(s)");
        return cpu;
    }

    private static Request[] pendingOn(Link link) {
        return new Request[] {new Request.Send(link, MemorySegment.NULL)};
    }

    @Test
    void onlyAWaitOnALinkThatCanShareCpusChecks() {
        CpuLink tcpLike = new CpuLink(0);
        tcpLike.canShare = false;
        CpuLink shm = new CpuLink(2);
        assertFalse(CpuSeparation.applies(pendingOn(tcpLike), 1));
        assertTrue(CpuSeparation.applies(pendingOn(shm), 1));
        Request[] both = {pendingOn(tcpLike)[0], pendingOn(shm)[0]};
        assertTrue(CpuSeparation.applies(both, 2));
        assertFalse(CpuSeparation.applies(both, 1), "only the first count requests are looked at");
        both[1].complete();
        assertFalse(CpuSeparation.applies(both, 2), "a completed request's link is not looked at");
    }

    /** Rank 1 waits (20 ms) through a progress loop for a send to rank 0, which "published" the waiter's own CPU. */
    private static void waitThroughProgressLoop(CpuLink toRank0) {
        waitThroughProgressLoop(toRank0, 20_000_000);
    }

    private static void waitThroughProgressLoop(CpuLink toRank0, long waitNanos) {
        Request[] rs = pendingOn(toRank0);
        toRank0.pending = rs[0];
        toRank0.completeAtNanos = System.nanoTime() + waitNanos;
        toRank0.peerCpu = Libc.currentCpu();
        new ProgressLoop(1, 10_000_000_000L, false, false, new Link[] {toRank0}).awaitAll(rs, 1);
        assertTrue(rs[0].isDone());
    }

    @Test
    void aLongWaitOnSharedMemoryPublishesItsCpuAndWithdrawsIt() {
        currentCpu(1);
        CpuLink toRank0 = new CpuLink(0);
        waitThroughProgressLoop(toRank0);
        assertTrue(toRank0.publications.size() >= 2 && toRank0.publications.getFirst() >= 0,
                "published: " + toRank0.publications);
        assertEquals(-1, toRank0.publications.getLast(), "withdrawn when the wait ended");
    }

    @Test
    void aWaitThatParksWithdrawsItsCpuAndPublishesNothingWhileParked() {
        currentCpu(1);
        List<Integer> seen = new ArrayList<>();
        CpuLink toRank0 = new CpuLink(0) {
            @Override
            protected void doProgress() {
                if (pending != null && !pending.isDone()) {
                    seen.add(shared());
                }
                super.doProgress();
            }
        };
        // 100 ms: parking begins 2 ms in, but a loaded machine's yields can delay the phase change by time slices.
        waitThroughProgressLoop(toRank0, 100_000_000);

        int published = seen.indexOf(seen.stream().filter(cpu -> cpu >= 0).findFirst().orElse(-3));
        assertTrue(published >= 0, "published early in the wait: " + seen.subList(0, Math.min(40, seen.size())));
        int withdrawn = seen.subList(published, seen.size()).indexOf(-1);
        assertTrue(withdrawn > 0, "withdrawn while still waiting, once parked");
        assertTrue(seen.subList(published + withdrawn, seen.size()).stream().allMatch(cpu -> cpu == -1),
                "nothing published again while parked");
    }

    @Test
    void aWaitOnLinksThatCannotShareCpusNeverLooksAtThem() {
        currentCpu(1);
        CpuLink tcpLike = new CpuLink(0);
        tcpLike.canShare = false;
        waitThroughProgressLoop(tcpLike);
        assertEquals(List.of(), tcpLike.publications);
    }

    @Test
    void theHigherRankMovesOffTheCpuTheLowerRankItWaitsForPublished() {
        int cpu = currentCpu(2);
        int cpus = Runtime.getRuntime().availableProcessors();
        CpuLink toRank0 = new CpuLink(0);
        toRank0.peerCpu = cpu;
        CpuSeparation rank1 = new CpuSeparation(1);

        assertTrue(rank1.check(pendingOn(toRank0), 1, System.nanoTime()));
        assertNotEquals(cpu, Libc.currentCpu(), "sched_setaffinity migrates the thread before it returns");
        assertEquals(cpus, Runtime.getRuntime().availableProcessors(), "the thread's CPUs are given back");
        assertEquals(cpu, toRank0.shared(), "published where it ran when it looked");
        rank1.withdraw();
        assertEquals(-1, toRank0.shared(), "withdrawn when the wait ends");
    }

    @Test
    void theLowerRankPublishesButStays() {
        int cpu = currentCpu(1);
        CpuLink toRank1 = new CpuLink(1);
        toRank1.peerCpu = cpu;
        CpuSeparation rank0 = new CpuSeparation(0);

        assertFalse(rank0.check(pendingOn(toRank1), 1, System.nanoTime()));
        assertEquals(cpu, toRank1.shared());
    }

    @Test
    void aLowerRankElsewhereOrNotWaitingIsNoReasonToMove() {
        int cpu = currentCpu(1);
        CpuLink toRank0 = new CpuLink(0);
        CpuSeparation rank1 = new CpuSeparation(1);

        assertFalse(rank1.check(pendingOn(toRank0), 1, System.nanoTime()), "not waiting: nothing published");
        // A CPU this thread cannot be on: a real neighbour's number may be where the scheduler just moved it.
        toRank0.peerCpu = cpu + (1 << 20);
        assertFalse(rank1.check(pendingOn(toRank0), 1, System.nanoTime()), "on another CPU");
    }

    @Test
    void aCompletedRequestsPeerIsNotLookedAt() {
        int cpu = currentCpu(1);
        CpuLink toRank0 = new CpuLink(0);
        toRank0.peerCpu = cpu;
        Request[] done = pendingOn(toRank0);
        done[0].complete();

        assertFalse(new CpuSeparation(1).check(done, 1, System.nanoTime()));
        assertEquals(-2, toRank0.shared(), "nothing published for a wait on nothing");
    }

    @Test
    void aRankMovesAtMostOncePerInterval() {
        int cpu = currentCpu(2);
        CpuLink toRank0 = new CpuLink(0);
        CpuSeparation rank1 = new CpuSeparation(1);
        long now = System.nanoTime();
        toRank0.peerCpu = cpu;
        assertTrue(rank1.check(pendingOn(toRank0), 1, now));
        rank1.withdraw();

        toRank0.peerCpu = Libc.currentCpu();
        assertFalse(rank1.check(pendingOn(toRank0), 1, now + CpuSeparation.MIN_MOVE_INTERVAL_NANOS - 1));
        rank1.withdraw();
        toRank0.peerCpu = Libc.currentCpu();
        assertTrue(rank1.check(pendingOn(toRank0), 1, now + CpuSeparation.MIN_MOVE_INTERVAL_NANOS));
    }
}
