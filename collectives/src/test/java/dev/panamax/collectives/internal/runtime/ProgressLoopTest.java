package dev.panamax.collectives.internal.runtime;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.Request;
import dev.panamax.collectives.internal.transport.TestLink;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One wait of the progress loop over a fake link, spinning only ({@code PANAMAX_WAIT=spin}) and with the default
 * backoff: while it spins, the loop reads the clock only every few rounds, and the checks that hang on the clock
 * (timeout, dead peer) must still come.
 */
class ProgressLoopTest {
    private static final Duration LIMIT = Duration.ofSeconds(20);

    /** A link whose one request completes on the given progress call; its peer check fails once told to. */
    private static final class CountingLink extends TestLink {
        Request pending;
        int progressCalls;
        int completeOnCall = Integer.MAX_VALUE;
        volatile String peerGone;

        CountingLink() {
            super(1);
        }

        @Override
        protected void doProgress() {
            if (++progressCalls == completeOnCall) {
                pending.complete();
            }
        }

        @Override
        protected void doCheckPeer() {
            if (peerGone != null) {
                throw new CollectiveException(peerGone);
            }
        }
    }

    private static Request[] pendingOn(CountingLink link) {
        link.pending = new Request.Send(link, MemorySegment.NULL);
        return new Request[] {link.pending};
    }

    private static ProgressLoop loop(CountingLink link, long timeoutNanos, boolean spinOnly) {
        ProgressLoop loop = new ProgressLoop(0, timeoutNanos, false, spinOnly, new Link[] {link});
        loop.begin("allreduce", 1);
        return loop;
    }

    @ParameterizedTest(name = "spin only: {0}")
    @ValueSource(booleans = {true, false})
    void aWaitEndsOnThePollThatCompletesItsRequest(boolean spinOnly) {
        CountingLink link = new CountingLink();
        link.completeOnCall = 5000;
        Request[] rs = pendingOn(link);
        assertTimeoutPreemptively(LIMIT, () -> loop(link, 10_000_000_000L, spinOnly).awaitAll(rs, 1));
        assertTrue(rs[0].isDone());
        assertEquals(5000, link.progressCalls, "polled until done, not after");
    }

    @ParameterizedTest(name = "spin only: {0}")
    @ValueSource(booleans = {true, false})
    void aWaitThatIsNeverServedTimesOutNamingWhatItWaitsFor(boolean spinOnly) {
        CountingLink link = new CountingLink();
        Request[] rs = pendingOn(link);
        long start = System.nanoTime();
        CollectiveTimeoutException e = assertTimeoutPreemptively(LIMIT, () -> assertThrows(
                CollectiveTimeoutException.class, () -> loop(link, 200_000_000L, spinOnly).awaitAll(rs, 1)));
        assertTrue(System.nanoTime() - start >= 200_000_000L, "not before the timeout");
        assertTrue(e.getMessage().contains("rank 0: allreduce step 1/1 timed out after 0.2 s waiting for: send of 0 "
                + "bytes to rank 1"), e.getMessage());
    }

    @ParameterizedTest(name = "spin only: {0}")
    @ValueSource(booleans = {true, false})
    void aWaitLearnsOfADeadPeerFromTheLivenessCheck(boolean spinOnly) {
        CountingLink link = new CountingLink();
        link.peerGone = "rank 1 died";
        Request[] rs = pendingOn(link);
        CollectiveException e = assertTimeoutPreemptively(LIMIT, () -> assertThrows(CollectiveException.class,
                () -> loop(link, 10_000_000_000L, spinOnly).awaitAll(rs, 1)));
        assertTrue(e.getMessage().contains("rank 1 died"), e.getMessage());
    }
}
