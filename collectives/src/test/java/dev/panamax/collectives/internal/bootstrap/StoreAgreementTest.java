package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.internal.auth.MutualAuth;
import dev.panamax.collectives.internal.elastic.AgreementState;
import dev.panamax.testing.Ports;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Agreements at the real store over real connections, a member dying (its connection closed) at each
 * point of an agreement: before it contributes, right after it contributes, and after the decision.
 * Every survivor gets the same decision; the victim is in it exactly when it died before the decision.
 */
class StoreAgreementTest {
    private static final long TIMEOUT = Duration.ofSeconds(20).toNanos();
    private static final MutualAuth AUTH = MutualAuth.of("store-agreement-test-secret");
    private static final int[] MEMBERS = {0, 1, 2, 3};
    /** Agreements block: each on a thread of its own (the common pool may have one thread). */
    private static final Executor THREAD_EACH = r -> Thread.ofPlatform().daemon().start(r);

    private enum Death { BEFORE_CONTRIBUTING, AFTER_CONTRIBUTING, AFTER_THE_DECISION }

    private static long flagsOf(int member) {
        return ~(1L << member);
    }

    @Test
    void everyMemberDyingAtEveryPointLeavesTheSurvivorsOneDecision() throws Exception {
        for (Death death : Death.values()) {
            for (int victim : MEMBERS) {
                int port = Ports.freePort();
                try (StoreServer server = new StoreServer("127.0.0.1", port, AUTH)) {
                    List<StoreClient> clients = new ArrayList<>();
                    for (int m : MEMBERS) {
                        clients.add(StoreClient.connect("127.0.0.1", port, TIMEOUT, m, AUTH));
                    }
                    String what = "member " + victim + " dies " + death;
                    StoreClient dying = clients.get(victim);
                    StoreClient witness = clients.get((victim + 1) % MEMBERS.length);
                    if (death == Death.BEFORE_CONTRIBUTING) {
                        dying.close();
                        awaitDeath(witness, victim);
                    } else if (death == Death.AFTER_CONTRIBUTING) {
                        dying.contribute("a", MEMBERS, victim, flagsOf(victim), TIMEOUT);
                        dying.close();
                        awaitDeath(witness, victim);
                    }
                    List<CompletableFuture<AgreementState.Decision>> decisions = new ArrayList<>();
                    for (int m : MEMBERS) {
                        if (m != victim || death == Death.AFTER_THE_DECISION) {
                            StoreClient c = clients.get(m);
                            decisions.add(CompletableFuture.supplyAsync(() -> c.agree("a", MEMBERS, m, flagsOf(m),
                                    TIMEOUT), THREAD_EACH));
                        }
                    }
                    List<AgreementState.Decision> got = new ArrayList<>();
                    for (CompletableFuture<AgreementState.Decision> f : decisions) {
                        got.add(f.get(30, TimeUnit.SECONDS));
                    }
                    for (AgreementState.Decision d : got) {
                        assertEquals(got.getFirst(), d, what + ": every survivor decides alike");
                    }
                    AgreementState.Decision d = got.getFirst();
                    long all = flagsOf(0) & flagsOf(1) & flagsOf(2) & flagsOf(3);
                    switch (death) {
                        case BEFORE_CONTRIBUTING -> {
                            assertArrayEquals(new int[] {victim}, d.failedMembers(), what);
                            assertEquals(all | (1L << victim), d.flags(), what);
                        }
                        case AFTER_CONTRIBUTING -> {
                            // It died before the others arrived, so before the decision: out, flags not counted.
                            assertArrayEquals(new int[] {victim}, d.failedMembers(), what);
                            assertEquals(all | (1L << victim), d.flags(), what);
                        }
                        case AFTER_THE_DECISION -> {
                            assertArrayEquals(new int[0], d.failedMembers(), what);
                            assertEquals(all, d.flags(), what);
                            // Its death shows in the next agreement.
                            dying.close();
                            List<CompletableFuture<AgreementState.Decision>> next = new ArrayList<>();
                            for (int m : MEMBERS) {
                                if (m != victim) {
                                    StoreClient c = clients.get(m);
                                    next.add(CompletableFuture.supplyAsync(() -> c.agree("b", MEMBERS, m, 1,
                                            TIMEOUT), THREAD_EACH));
                                }
                            }
                            for (CompletableFuture<AgreementState.Decision> f : next) {
                                assertArrayEquals(new int[] {victim}, f.get(30, TimeUnit.SECONDS).failedMembers(),
                                        what);
                            }
                        }
                        default -> throw new AssertionError(death);
                    }
                    clients.forEach(StoreClient::close);
                }
            }
        }
    }

    /** Returns once the store counts {@code member} as failed: a lookup waiting on it gives up. */
    private static void awaitDeath(StoreClient witness, int member) {
        assertEquals(null, witness.getFrom("never/published", member));
        assertTrue(witness.failed(member), "asked at once, the store says member " + member + " failed too");
        assertFalse(witness.failed((member + 2) % MEMBERS.length), "a member still connected has not failed");
    }

    @Test
    void aMemberThatStaysConnectedButSilentIsCountedFailedAtTheDeadline() throws Exception {
        int port = Ports.freePort();
        long deadline = Duration.ofMillis(700).toNanos();
        try (StoreServer server = new StoreServer("127.0.0.1", port, AUTH)) {
            List<StoreClient> clients = new ArrayList<>();
            for (int m : new int[] {0, 1, 2}) {
                clients.add(StoreClient.connect("127.0.0.1", port, TIMEOUT, m, AUTH));
            }
            long start = System.nanoTime();
            CompletableFuture<AgreementState.Decision> a = CompletableFuture.supplyAsync(
                    () -> clients.get(0).agree("x", new int[] {0, 1, 2}, 0, 3, deadline), THREAD_EACH);
            AgreementState.Decision b = clients.get(1).agree("x", new int[] {0, 1, 2}, 1, 5, deadline);
            double ms = (System.nanoTime() - start) / 1e6;
            assertEquals(b, a.get(10, TimeUnit.SECONDS));
            assertArrayEquals(new int[] {2}, b.failedMembers());
            assertEquals(1, b.flags());
            assertTrue(ms >= 600 && ms < 5000, "decided after " + ms + " ms");
            clients.forEach(StoreClient::close);
        }
    }
}
