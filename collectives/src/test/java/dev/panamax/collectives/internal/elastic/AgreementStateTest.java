package dev.panamax.collectives.internal.elastic;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The agreement's decision rule over every interleaving of what its members can do: each member
 * contributes, contributes and then dies, dies without contributing, or never shows up, in every
 * order across members, with the deadline passing at every point (or never). In every run the
 * decision, once made, never changes (so every member that asks gets the same answer), is made
 * exactly when every member has contributed or failed (or at the deadline), excludes exactly the
 * members failed by then, and carries the AND of the others' flags (888,728 runs, 1 to 5 members;
 * the deadline at every point for up to 4).
 */
class AgreementStateTest {
    /** What one member does, in order. */
    private enum Script {
        CONTRIBUTE, CONTRIBUTE_THEN_DIE, DIE, ABSENT;

        int events() {
            return switch (this) {
                case CONTRIBUTE, DIE -> 1;
                case CONTRIBUTE_THEN_DIE -> 2;
                case ABSENT -> 0;
            };
        }
    }

    /** One event: member m's next step, or the deadline passing (m = -1). */
    private record Event(int member) {
    }

    private int runs;

    @Test
    void everyInterleavingOfContributionsDeathsAndTheDeadlineDecidesOnceAndAlike() {
        for (int n = 1; n <= 5; n++) {
            int[] members = new int[n];
            for (int i = 0; i < n; i++) {
                members[i] = 10 + 3 * i; // member ids need not be ranks
            }
            Script[] scripts = new Script[n];
            forEachScript(members, scripts, 0, n <= 4);
        }
        assertEquals(888_728, runs, "interleavings checked");
    }

    private void forEachScript(int[] members, Script[] scripts, int i, boolean withDeadline) {
        if (i == members.length) {
            List<Event> events = new ArrayList<>();
            int[] left = new int[members.length];
            for (int m = 0; m < members.length; m++) {
                left[m] = scripts[m].events();
            }
            interleave(members, scripts, left, events, withDeadline, false);
            return;
        }
        for (Script s : Script.values()) {
            scripts[i] = s;
            forEachScript(members, scripts, i + 1, withDeadline);
        }
    }

    private void interleave(int[] members, Script[] scripts, int[] left, List<Event> events, boolean withDeadline,
            boolean deadlineUsed) {
        boolean any = false;
        for (int m = 0; m < members.length; m++) {
            if (left[m] > 0) {
                any = true;
                left[m]--;
                events.add(new Event(m));
                interleave(members, scripts, left, events, withDeadline, deadlineUsed);
                events.removeLast();
                left[m]++;
            }
        }
        if (withDeadline && !deadlineUsed) {
            events.add(new Event(-1));
            interleave(members, scripts, left, events, true, true);
            events.removeLast();
        }
        if (!any) {
            check(members, scripts, events);
        }
    }

    private static long flagsOf(int i) {
        return ~(1L << i); // the AND tells exactly whose flags were counted
    }

    private void check(int[] members, Script[] scripts, List<Event> events) {
        runs++;
        int n = members.length;
        AgreementState a = new AgreementState(members);
        boolean[] contributed = new boolean[n];
        boolean[] died = new boolean[n];
        int[] step = new int[n];
        boolean expired = false;
        AgreementState.Decision decided = null;
        boolean[] contributedAtDecision = null;
        boolean[] diedAtDecision = null;
        for (Event e : events) {
            if (e.member() < 0) {
                a.expire();
                expired = true;
            } else {
                int m = e.member();
                boolean contributes = scripts[m] != Script.DIE && step[m] == 0;
                if (contributes) {
                    a.contribute(members[m], flagsOf(m));
                    contributed[m] = true;
                } else {
                    a.fail(members[m]);
                    died[m] = true;
                }
                step[m]++;
            }
            AgreementState.Decision d = a.decision();
            boolean complete = expired;
            if (!complete) {
                complete = true;
                for (int m = 0; m < n; m++) {
                    complete &= contributed[m] || died[m];
                }
            }
            if (decided == null) {
                assertEquals(complete, d != null, () -> "decided exactly when complete, after " + events);
                if (d != null) {
                    decided = d;
                    contributedAtDecision = contributed.clone();
                    diedAtDecision = died.clone();
                }
            } else {
                assertEquals(decided, d, () -> "a decision never changes: " + events);
            }
        }
        if (decided == null) {
            // Only a member that never shows up, and no deadline, may leave it open.
            boolean someAbsent = false;
            for (int m = 0; m < n; m++) {
                someAbsent |= scripts[m] == Script.ABSENT;
            }
            assertTrue(someAbsent && !expired || n == 0, () -> "undecided: " + events);
            return;
        }
        List<Integer> failed = new ArrayList<>();
        long and = -1L;
        for (int m = 0; m < n; m++) {
            boolean excluded = diedAtDecision[m] || !contributedAtDecision[m];
            if (excluded) {
                failed.add(members[m]);
            } else {
                and &= flagsOf(m);
            }
        }
        assertArrayEquals(failed.stream().mapToInt(Integer::intValue).toArray(), decided.failedMembers(),
                () -> "failed set of " + events);
        assertEquals(and, decided.flags(), () -> "flags of " + events);
    }

    @Test
    void anAgreementOfNoOneButItselfDecidesAtOnce() {
        AgreementState a = new AgreementState(new int[] {7});
        assertNull(a.decision());
        a.contribute(7, 0b1010);
        assertNotNull(a.decision());
        assertEquals(0b1010, a.decision().flags());
        assertEquals(0, a.decision().failedMembers().length);
    }

    @Test
    void strangersAndDuplicatesAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new AgreementState(new int[] {1, 2, 1}));
        AgreementState a = new AgreementState(new int[] {1, 2});
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.contribute(3, 1));
        assertTrue(e.getMessage().contains("member 3"), e.getMessage());
        assertArrayEquals(new int[] {1, 2}, a.waitingFor());
    }
}
