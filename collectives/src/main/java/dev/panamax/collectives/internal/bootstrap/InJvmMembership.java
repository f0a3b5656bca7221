package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.internal.elastic.AgreementState;
import dev.panamax.collectives.internal.elastic.Agreements;
import dev.panamax.collectives.internal.elastic.Membership;
import dev.panamax.collectives.internal.runtime.CommunicatorImpl;
import dev.panamax.collectives.internal.transport.local.HostAllocator;
import dev.panamax.collectives.internal.transport.local.LocalFabric;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The membership of a group of in-JVM ranks (threads as ranks): the same agreement rule as the
 * rendezvous store ({@link AgreementState}), on a shared object. Member {@code m} is rank m of the
 * group as created; it counts as failed once every communicator it holds from this group is closed
 * or aborted. New communicators get a fresh {@link LocalFabric} of their own.
 */
final class InJvmMembership implements Membership {
    private final int[] users;
    /** The agreements and the failed members; guarded by {@code this}. */
    private final Agreements agreements = new Agreements(this);
    private final Map<String, LocalFabric> fabrics = new HashMap<>();

    InJvmMembership(int size) {
        this.users = new int[size];
    }

    @Override
    public AgreementState.Decision agree(String instance, int[] members, int self, long flags, long timeoutNanos) {
        AgreementState.Decision d = decide(instance, members, self, flags, timeoutNanos);
        if (d.failed(self)) {
            throw new CollectiveException("rank " + self + " of the group was counted as failed in " + instance
                    + ": it came after the agreement's timeout");
        }
        return d;
    }

    private synchronized AgreementState.Decision decide(String instance, int[] members, int self, long flags,
            long timeoutNanos) {
        try {
            return agreements.contribute(instance, members, self, flags, timeoutNanos, true, () -> false);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CollectiveTimeoutException("rank " + self + ": interrupted in agreement " + instance);
        }
    }

    /** Connects {@code members} over a fresh in-JVM fabric; ends with an agreement, as over the store. */
    @Override
    public Communicator connect(String name, int[] members, int self, long timeoutNanos) {
        int rank = -1;
        for (int i = 0; i < members.length; i++) {
            if (members[i] == self) {
                rank = i;
            }
        }
        if (rank < 0) {
            throw new IllegalArgumentException("member " + self + " is not in " + Arrays.toString(members));
        }
        LocalFabric fabric;
        synchronized (this) {
            fabric = fabrics.computeIfAbsent(name, k -> LocalFabric.create(members.length));
        }
        Communicator c = create(fabric, rank, members, name, timeoutNanos);
        AgreementState.Decision d;
        try {
            d = agree(name + "/connected", members, self, 1, 2 * timeoutNanos);
        } catch (RuntimeException e) {
            c.close();
            throw e;
        }
        if (d.failedMembers().length > 0) {
            c.close();
            throw new PeerFailedException(d.failedMembers()[0], "rank " + rank + ": connecting " + name
                    + " failed: member(s) " + Arrays.toString(d.failedMembers()) + " of " + Arrays.toString(members)
                    + " closed their communicators while the ranks connected", null);
        }
        synchronized (this) {
            fabrics.remove(name);
        }
        return c;
    }

    @Override
    public int[] grow(String name, int[] members, int self, int newRanks, long timeoutNanos) {
        throw new UnsupportedOperationException("an in-JVM group cannot grow: no process can join it (use a job of "
                + "processes, Panamax.builder(), to grow)");
    }

    /** The communicator of {@code rank} on {@code fabric}, which holds its member until it closes. */
    Communicator create(LocalFabric fabric, int rank, int[] members, String name, long timeoutNanos) {
        int size = members.length;
        int member = members[rank];
        synchronized (this) {
            users[member]++;
        }
        Topology flat = Topology.flat(size, Topology.SHARED_MEMORY.bytesPerSecond(),
                Topology.SHARED_MEMORY.latencySeconds());
        return new CommunicatorImpl(rank, size, fabric.linksOf(rank), timeoutNanos, new HostAllocator(), size,
                Runtime.getRuntime().availableProcessors(), flat,
                null, new CommunicatorImpl.Group(this, members, name), () -> {
                    fabric.markClosed(rank);
                    release(member);
                });
    }

    private synchronized void release(int member) {
        if (--users[member] > 0 || agreements.hasFailed(member)) {
            return;
        }
        agreements.memberFailed(member);
    }
}
