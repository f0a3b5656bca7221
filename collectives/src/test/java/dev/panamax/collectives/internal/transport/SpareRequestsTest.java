package dev.panamax.collectives.internal.transport;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

class SpareRequestsTest {
    private final TestLink link = new TestLink(1);
    private final SpareRequests<Request.Send, Request.Receive> spares =
            new SpareRequests<>(link, Request.Send.class, Request.Receive.class);
    private final MemorySegment buffer = Arena.ofAuto().allocate(64);

    @Test
    void keepsACompletedRequestOfItsLinkWithoutItsBuffers() {
        Request.Send s = done(new Request.Send(link, buffer));
        Request.Receive r = done(new Request.Receive(link, buffer, buffer, 1, 1, null, null));
        spares.keep(s);
        spares.keep(r);
        assertSame(s, spares.pollSend());
        assertNull(s.src, "a kept send holds no buffer");
        assertSame(r, spares.pollReceive());
        assertNull(r.dst, "a kept receive holds no buffer");
        assertNull(r.with);
        assertNull(spares.pollSend());
        assertNull(spares.pollReceive());
    }

    @Test
    void leavesPendingRequestsAndThoseOfOtherLinks() {
        Request.Send pending = new Request.Send(link, buffer);
        spares.keep(pending);
        spares.keep(done(new Request.Send(new TestLink(2), buffer)));
        assertNull(spares.pollSend());
        assertSame(buffer, pending.src, "a request left alone keeps its buffer");
    }

    @Test
    void keepsAtMostItsCapacityOfEachKind() {
        for (int i = 0; i < SpareRequests.CAPACITY + 3; i++) {
            spares.keep(done(new Request.Send(link, buffer)));
            spares.keep(done(new Request.Receive(link, buffer, null, 1, 1, null, null)));
        }
        int sends = 0;
        while (spares.pollSend() != null) {
            sends++;
        }
        int receives = 0;
        while (spares.pollReceive() != null) {
            receives++;
        }
        assertEquals(SpareRequests.CAPACITY, sends);
        assertEquals(SpareRequests.CAPACITY, receives);
    }

    @Test
    void aReusedRequestIsPendingAgainOnItsNewBuffer() {
        Request.Send s = done(new Request.Send(link, buffer));
        s.offset = 40;
        spares.keep(s);
        MemorySegment next = Arena.ofAuto().allocate(8);
        spares.pollSend().reuse(next);
        assertSame(next, s.src);
        assertEquals(0, s.offset);
        assertEquals(false, s.isDone());
    }

    private static <T extends Request> T done(T r) {
        r.complete();
        return r;
    }
}
