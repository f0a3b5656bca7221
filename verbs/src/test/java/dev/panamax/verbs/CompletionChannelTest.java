package dev.panamax.verbs;

import dev.panamax.memory.HostMemory;
import dev.panamax.testing.RdmaTest;
import dev.panamax.verbs.RdmaTestDevice.Loopback;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static dev.panamax.verbs.RdmaTestDevice.awaitOne;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A completion channel wakes a sleeper for the first completion after a notification request, once per request,
 * and closes after its queues (with events taken or not, a queue's destruction never waits).
 */
@RdmaTest
class CompletionChannelTest {
    private static final long SHORT_NANOS = 20_000_000;
    private static final long LONG_NANOS = 30_000_000_000L;

    private Loopback l;
    private Arena arena;
    private MemoryRegion mrA;
    private MemoryRegion mrB;
    private WorkCompletions wcs;

    @BeforeEach
    void setUp() {
        l = new Loopback(true).connect();
        arena = Arena.ofConfined();
        MemorySegment bufA = HostMemory.allocate(arena, 4096);
        MemorySegment bufB = HostMemory.allocate(arena, 4096);
        mrA = l.pd.register(bufA, Access.ALL_REMOTE, arena);
        mrB = l.pd.register(bufB, Access.ALL_REMOTE, arena);
        wcs = WorkCompletions.allocate(arena, 4);
    }

    @AfterEach
    void tearDown() {
        if (l != null) {
            l.close();
        }
        if (arena != null) {
            arena.close();
        }
    }

    private void sendAToB() {
        l.b.postReceive(ReceiveRequest.allocate(arena).wrId(2).local(mrB, 0, 64));
        l.a.postSend(SendRequest.allocate(arena).wrId(1).opcode(Opcode.SEND).local(mrA, 0, 64));
    }

    @Test
    void aRequestedQueueWakesTheSleeperOnceForItsNextCompletion() {
        assertFalse(l.channel.await(SHORT_NANOS), "nothing requested, nothing posted");
        assertTrue(l.cqB.requestNotification());
        assertEquals(0, l.cqB.poll(wcs));
        sendAToB();
        assertTrue(l.channel.await(LONG_NANOS), "the receive's completion signals the channel");
        awaitOne(l.cqB, wcs);
        awaitOne(l.cqA, wcs);
        assertFalse(l.channel.await(SHORT_NANOS), "one event per request; the sender's queue asked for none");
    }

    @Test
    void aSleeperInAnotherThreadIsWokenByTheCompletionNotByItsTimeout() throws Exception {
        assertTrue(l.cqB.requestNotification());
        CompletableFuture<Boolean> woken = CompletableFuture.supplyAsync(() -> l.channel.await(LONG_NANOS));
        Thread.sleep(50); // most likely asleep by now; either way the event is not lost
        sendAToB();
        assertTrue(woken.get(LONG_NANOS / 2, TimeUnit.NANOSECONDS), "woken well before its timeout");
        awaitOne(l.cqB, wcs);
    }

    @Test
    void aCompletionThatCameBeforeTheRequestSignalsNothingSoTheSleeperPollsFirst() {
        sendAToB();
        awaitOne(l.cqA, wcs); // the receive has completed too by the time the send is acknowledged
        assertTrue(l.cqB.requestNotification());
        assertFalse(l.channel.await(SHORT_NANOS));
        assertEquals(1, l.cqB.poll(wcs), "the completion waits in the queue for the poll after the request");
    }

    @Test
    void queuesWithEventsNotTakenCloseWithoutWaitingAndTheChannelClosesAfterThem() {
        assertTrue(l.cqA.requestNotification());
        assertTrue(l.cqB.requestNotification());
        sendAToB();
        awaitOne(l.cqA, wcs);
        awaitOne(l.cqB, wcs);
        IllegalStateException e = assertThrows(IllegalStateException.class, l.channel::close);
        assertTrue(e.getMessage().contains("used by 2 open completion queue(s)"), e.getMessage());
        assertTimeoutPreemptively(Duration.ofSeconds(30), () -> l.close(), "ibv_destroy_cq waited for an ack");
        assertFalse(l.channel.isOpen());
        assertFalse(l.cqB.requestNotification(), "a closed queue asks nothing");
        assertFalse(l.channel.await(SHORT_NANOS));
    }

    @Test
    void aQueueWithoutAChannelCannotAskAndAChannelServesOnlyItsOwnContext() {
        CompletionQueue plain = l.context.createCompletionQueue(4);
        IllegalStateException e = assertThrows(IllegalStateException.class, plain::requestNotification);
        assertTrue(e.getMessage().contains("without a completion channel"), e.getMessage());
        try (VerbsContext other = RdmaTestDevice.openDevice()) {
            IllegalArgumentException wrong = assertThrows(IllegalArgumentException.class,
                    () -> other.createCompletionQueue(4, l.channel));
            assertTrue(wrong.getMessage().contains("another device context"), wrong.getMessage());
        }
    }
}
