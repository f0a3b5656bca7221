package dev.panamax.collectives.internal.elastic;

import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;

/**
 * The agreements of one coordinator (the rendezvous store, or the shared object of in-JVM ranks): each
 * named {@link AgreementState} with its deadline, and the members that have failed. Guarded by the
 * coordinator's own monitor {@code lock}: every method is called holding it, and waits on it, so that a
 * coordinator keeps one lock for its data and its agreements.
 */
public final class Agreements {
    /** One agreement and when it expires. */
    private record Pending(AgreementState state, long deadlineNanos) {
    }

    private final Object lock;
    private final Map<String, Pending> pending = new HashMap<>();
    private final Set<Integer> failed = new HashSet<>();

    /** Agreements guarded by {@code lock}, whose monitor the caller holds in every call. */
    public Agreements(Object lock) {
        this.lock = lock;
    }

    /** Whether {@code member} has failed (and not come back). */
    public boolean hasFailed(int member) {
        return failed.contains(member);
    }

    /** {@code member} failed: in every undecided agreement, and in those that start later. Wakes the waits. */
    public void memberFailed(int member) {
        failed.add(member);
        for (Pending p : pending.values()) {
            if (p.state().isMember(member)) {
                p.state().fail(member);
            }
        }
        lock.notifyAll();
    }

    /** {@code member} is back (connected again under its id): alive for agreements that start from now. */
    public void memberBack(int member) {
        failed.remove(member);
    }

    /**
     * Contributes {@code flags} for {@code self} to agreement {@code instance}; the first contribution fixes
     * the members and the deadline ({@code timeoutNanos} from now), after which the members that have not
     * contributed count as failed. With {@code wait}, waits on the lock for the decision.
     *
     * @return the decision; null without {@code wait}, or when {@code closing} turned true first
     * @throws IllegalArgumentException when {@code members} are not those of the first contribution
     */
    public AgreementState.Decision contribute(String instance, int[] members, int self, long flags,
            long timeoutNanos, boolean wait, BooleanSupplier closing) throws InterruptedException {
        Pending p = pending.get(instance);
        if (p == null) {
            p = new Pending(new AgreementState(members), System.nanoTime() + timeoutNanos);
            pending.put(instance, p);
            for (int m : members) {
                if (failed.contains(m)) {
                    p.state().fail(m);
                }
            }
        } else if (!Arrays.equals(p.state().members(), Arrays.stream(members).sorted().toArray())) {
            throw new IllegalArgumentException("agreement " + instance + " has members "
                    + Arrays.toString(p.state().members()) + " but member " + self + " named "
                    + Arrays.toString(members));
        }
        p.state().contribute(self, flags);
        lock.notifyAll();
        if (!wait) {
            return null;
        }
        while (p.state().decision() == null && !closing.getAsBoolean()) {
            long left = p.deadlineNanos() - System.nanoTime();
            if (left <= 0) {
                p.state().expire();
                lock.notifyAll();
                break;
            }
            lock.wait(Math.max(1, left / 1_000_000));
        }
        return p.state().decision();
    }
}
