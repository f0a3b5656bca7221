package dev.panamax.collectives.internal.elastic;

import java.util.Arrays;
import java.util.Objects;
import java.util.stream.IntStream;

/**
 * One agreement among the members of a group, as its coordinator sees it: each member either
 * contributes its flags or fails (its process died, it left, or it missed the deadline). The
 * decision is made, once and for good, at the first moment every member has done one of the two:
 * the failed set is every member failed by then (also those that contributed before failing), and
 * the flags are the AND of the others' contributions. Events after the decision change nothing, so
 * every member that asks gets the same answer; one in the failed set is told it was excluded.
 *
 * <p>Not thread-safe: the coordinator calls it under its own lock.
 */
public final class AgreementState {
    /** The outcome: the AND of the survivors' flags and the failed members, ascending. */
    public record Decision(long flags, int[] failedMembers) {
        public Decision {
            failedMembers = failedMembers.clone();
        }

        public boolean failed(int member) {
            return Arrays.binarySearch(failedMembers, member) >= 0;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Decision d && d.flags == flags && Arrays.equals(d.failedMembers, failedMembers);
        }

        @Override
        public int hashCode() {
            return Long.hashCode(flags) * 31 + Arrays.hashCode(failedMembers);
        }

        @Override
        public String toString() {
            return "Decision[flags=" + Long.toHexString(flags) + ", failed=" + Arrays.toString(failedMembers) + "]";
        }
    }

    private final int[] members;
    private final boolean[] contributed;
    private final boolean[] failed;
    private final long[] flags;
    private Decision decision;

    /** An agreement among {@code members} (distinct member ids, any order). */
    public AgreementState(int[] members) {
        Objects.requireNonNull(members, "members");
        this.members = members.clone();
        Arrays.sort(this.members);
        for (int i = 1; i < this.members.length; i++) {
            if (this.members[i] == this.members[i - 1]) {
                throw new IllegalArgumentException("member " + this.members[i] + " listed twice");
            }
        }
        this.contributed = new boolean[members.length];
        this.failed = new boolean[members.length];
        this.flags = new long[members.length];
        decideIfComplete();
    }

    /** Whether {@code member} belongs to this agreement. */
    public boolean isMember(int member) {
        return Arrays.binarySearch(members, member) >= 0;
    }

    /** The members, ascending. */
    public int[] members() {
        return members.clone();
    }

    /** {@code member} contributes {@code value}; a second contribution or one after the decision is ignored. */
    public void contribute(int member, long value) {
        int i = index(member);
        if (decision != null || contributed[i] || failed[i]) {
            return;
        }
        contributed[i] = true;
        flags[i] = value;
        decideIfComplete();
    }

    /** {@code member} failed (died, left); ignored after the decision. */
    public void fail(int member) {
        int i = index(member);
        if (decision != null || failed[i]) {
            return;
        }
        failed[i] = true;
        decideIfComplete();
    }

    /** The deadline passed: every member that has not contributed counts as failed, and the decision is made. */
    public void expire() {
        if (decision != null) {
            return;
        }
        for (int i = 0; i < members.length; i++) {
            if (!contributed[i]) {
                failed[i] = true;
            }
        }
        decideIfComplete();
    }

    /** The decision, or null while some member has neither contributed nor failed. */
    public Decision decision() {
        return decision;
    }

    /** The members that have neither contributed nor failed yet, ascending (for messages). */
    public int[] waitingFor() {
        return IntStream.range(0, members.length).filter(i -> !contributed[i] && !failed[i])
                .map(i -> members[i]).toArray();
    }

    private void decideIfComplete() {
        long and = -1L;
        int nFailed = 0;
        for (int i = 0; i < members.length; i++) {
            if (!contributed[i] && !failed[i]) {
                return;
            }
            if (failed[i]) {
                nFailed++;
            } else {
                and &= flags[i];
            }
        }
        int[] out = new int[nFailed];
        int k = 0;
        for (int i = 0; i < members.length; i++) {
            if (failed[i]) {
                out[k++] = members[i];
            }
        }
        decision = new Decision(and, out);
    }

    private int index(int member) {
        int i = Arrays.binarySearch(members, member);
        if (i < 0) {
            throw new IllegalArgumentException("member " + member + " is not in the agreement "
                    + Arrays.toString(members));
        }
        return i;
    }
}
