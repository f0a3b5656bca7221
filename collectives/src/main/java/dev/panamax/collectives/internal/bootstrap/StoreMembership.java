package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.TransportKind;
import dev.panamax.collectives.internal.auth.MutualAuth;
import dev.panamax.collectives.internal.elastic.AgreementState;
import dev.panamax.collectives.internal.elastic.Membership;
import dev.panamax.collectives.internal.runtime.CommunicatorImpl;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.PeerInfo;
import dev.panamax.collectives.internal.transport.Rendezvous;
import dev.panamax.collectives.internal.transport.Transport;
import dev.panamax.collectives.internal.transport.TransportSelector;
import dev.panamax.collectives.internal.transport.shm.ShmAllocator;
import dev.panamax.collectives.internal.transport.shm.ShmTransport;
import dev.panamax.collectives.internal.transport.tcp.TcpTransport;
import dev.panamax.collectives.internal.transport.verbs.VerbsTransport;

import java.io.IOException;
import java.net.InetAddress;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The membership of one process of a job: agreements run at the rendezvous store, and new
 * communicators connect through it. The communicators of this process that descend from one
 * {@link ProcessBootstrap#connect} (shrunk ones included) share it; the last of them to close closes
 * the store connection, which the store takes as this member leaving, and on rank 0 the store
 * itself, so a job survives the loss of any rank but the store's host.
 */
final class StoreMembership implements Membership {
    private final StoreServer server;
    private final StoreClient store;
    private final TransportKind kind;
    private final MutualAuth auth;
    private final String bindAddress;
    /** Open communicators using this membership; guarded by {@code this}. */
    private int users;
    private boolean closed;

    /** Takes over {@code server} (null unless this process hosts the store) and {@code store}. */
    StoreMembership(StoreServer server, StoreClient store, TransportKind kind, MutualAuth auth, String bindAddress) {
        this.server = server;
        this.store = store;
        this.kind = kind;
        this.auth = auth;
        this.bindAddress = bindAddress;
    }

    @Override
    public AgreementState.Decision agree(String instance, int[] members, int self, long flags, long timeoutNanos) {
        AgreementState.Decision d = store.agree(instance, members, self, flags, timeoutNanos);
        if (d.failed(self)) {
            throw new CollectiveException("member " + self + " (rank " + indexOf(members, self) + " of " + instance
                    + ") was counted as failed by the other ranks: it came after the agreement's timeout");
        }
        return d;
    }

    /**
     * Connects the group: each rank publishes its process id and host, the transports connect a link
     * to each peer, and an agreement ends it, so that nobody leaves before every peer has connected
     * and every rank learns alike when one failed meanwhile. A rank that fails on its own contributes
     * to that agreement without waiting and throws its error.
     */
    @Override
    public Communicator connect(String name, int[] members, int self, long timeoutNanos) {
        int rank = indexOf(members, self);
        int size = members.length;
        retain();
        ShmAllocator allocator = null;
        TransportSelector selector = null;
        TransportSelector.Connected connected = null;
        String[] hosts = new String[size];
        PeerInfo me = new PeerInfo(rank, ProcessHandle.current().pid(), HostIdentity.current());
        long[] localPids = {me.pid()};
        RuntimeException error = null;
        try {
            allocator = new ShmAllocator();
            selector = new TransportSelector(transports(allocator));
            Rendezvous rendezvous = new StoreRendezvous(store, name, rank, members, timeoutNanos);
            // Listening sockets open before this rank announces itself, so early peers queue up.
            selector.prepare(rendezvous);
            rendezvous.publish("rank", me.pid() + " " + me.host());
            PeerInfo[] peers = new PeerInfo[size];
            for (int p = 0; p < size; p++) {
                String[] f = rendezvous.lookup("rank", p).split(" ");
                peers[p] = new PeerInfo(p, Long.parseLong(f[0]), f[1]);
                hosts[p] = f[1];
            }
            localPids = Arrays.stream(peers).filter(me::sameHost).mapToLong(PeerInfo::pid).toArray();
            connected = selector.connect(rendezvous, me, peers);
        } catch (IOException e) {
            error = new CollectiveException("rank " + rank + ": connecting the communicator failed: " + e.getMessage(),
                    e);
        } catch (PeerFailedException e) {
            // The transports and the lookups name the peer by its rank here; the caller knows members.
            error = new PeerFailedException(members[e.peer()], e.getMessage(), e);
        } catch (RuntimeException e) {
            error = e;
        }
        String done = name + "/connected";
        AgreementState.Decision d = null;
        try {
            if (error != null) {
                store.contribute(done, members, self, 0, timeoutNanos);
            } else {
                // The first rank to arrive may wait for the slowest to finish connecting.
                d = store.agree(done, members, self, 1, 2 * timeoutNanos);
            }
        } catch (RuntimeException e) {
            if (error == null) {
                error = e;
            } else {
                error.addSuppressed(e);
            }
        }
        if (error == null && d.flags() == 1 && d.failedMembers().length == 0) {
            TransportSelector.Connected sessions = connected;
            ShmAllocator own = allocator;
            try {
                return new CommunicatorImpl(rank, size, connected.links(), timeoutNanos, allocator,
                        HostIdentity.ranksOn(hosts, me.host()), HostIdentity.usableCpus(localPids),
                        HostIdentity.detectTopology(hosts, kind),
                        connected.registrar(), new CommunicatorImpl.Group(this, members, name), () -> {
                            sessions.close();
                            own.close();
                            release();
                        });
            } catch (RuntimeException e) {
                error = e;
            }
        }
        closeAll(selector, connected, allocator);
        release();
        if (error != null) {
            throw error;
        }
        if (d.failed(self)) {
            throw new CollectiveException("rank " + rank + ": connecting " + name
                    + " took longer than the others waited: it was counted as failed");
        }
        if (d.failedMembers().length > 0) {
            throw new PeerFailedException(d.failedMembers()[0], "rank " + rank + ": connecting " + name
                    + " failed: member(s) " + Arrays.toString(d.failedMembers()) + " of " + Arrays.toString(members)
                    + " died or left while the ranks connected", null);
        }
        throw new CollectiveException("rank " + rank + ": connecting " + name
                + " failed on another rank (its own error says why)");
    }

    /**
     * The first member takes fresh member ids from the store's counter (set past the job's ranks at
     * launch), writes one ticket per joiner ({@code join/ticket/N}, N counting every join of the job)
     * and the new member list; the others read the list, giving up if the first member died.
     */
    @Override
    public int[] grow(String name, int[] members, int self, int newRanks, long timeoutNanos) {
        String key = name + "/members";
        if (self != members[0]) {
            String v = store.getFrom(key, members[0]);
            if (v == null) {
                throw new PeerFailedException(members[0], "member " + self + ": rank 0 of the growing communicator "
                        + "died before it opened " + name, null);
            }
            return Arrays.stream(v.split(",")).mapToInt(Integer::parseInt).toArray();
        }
        int first = (int) (store.add(NEXT_MEMBER, newRanks) - newRanks);
        long tickets = store.add(TICKETS_GIVEN, newRanks) - newRanks;
        int[] out = Arrays.copyOf(members, members.length + newRanks);
        for (int j = 0; j < newRanks; j++) {
            out[members.length + j] = first + j;
        }
        String list = Arrays.stream(out).mapToObj(Integer::toString).collect(Collectors.joining(","));
        for (int j = 0; j < newRanks; j++) {
            store.set(TICKET + (tickets + j + 1), name + " " + (first + j) + " " + list);
        }
        store.set(key, list);
        return out;
    }

    /** The store's counter of member ids: rank 0 sets it to the job's size at launch. */
    static final String NEXT_MEMBER = "members/next";
    /** Counts the processes that asked to join, and the tickets handed out. */
    static final String TICKETS_ASKED = "join/asked";
    private static final String TICKETS_GIVEN = "join/given";
    /** A joiner's ticket, {@code join/ticket/N}: "communicator member-id members". */
    static final String TICKET = "join/ticket/";

    private synchronized void retain() {
        if (closed) {
            throw new IllegalStateException("the connection to the rendezvous store is closed");
        }
        users++;
    }

    /** One communicator less; the last closes the store connection and, on its host, the store. */
    private void release() {
        synchronized (this) {
            users--;
        }
        closeIfUnused();
    }

    /** Closes the store connection (and, on its host, the store) once no communicator uses them. */
    void closeIfUnused() {
        synchronized (this) {
            if (users > 0 || closed) {
                return;
            }
            closed = true;
        }
        store.close();
        if (server != null) {
            server.close();
        }
    }

    /** The transports of the job's {@link TransportKind}, in order of preference. */
    private List<Transport> transports(ShmAllocator allocator) {
        return switch (kind) {
            case AUTO -> List.of(new ShmTransport(allocator), new TcpTransport(auth, bindAddress));
            case SHM -> List.of(new ShmTransport(allocator));
            case TCP -> List.of(new TcpTransport(auth, bindAddress));
            case VERBS -> List.of(new VerbsTransport(auth, bindAddress));
        };
    }

    private static void closeAll(TransportSelector selector, TransportSelector.Connected connected,
            ShmAllocator allocator) {
        if (selector != null) {
            selector.release();
        }
        if (connected != null) {
            for (Link l : connected.links()) {
                if (l != null) {
                    l.close();
                }
            }
            connected.close();
        }
        if (allocator != null) {
            allocator.close();
        }
    }

    private static int indexOf(int[] members, int self) {
        for (int i = 0; i < members.length; i++) {
            if (members[i] == self) {
                return i;
            }
        }
        throw new IllegalArgumentException("member " + self + " is not in " + Arrays.toString(members));
    }

    /**
     * The rendezvous store as the transports of group {@code group} see it: values are published under
     * {@code group/name/rank}, and a lookup gives up when the member who is to publish has failed.
     */
    private record StoreRendezvous(StoreClient store, String group, int rank, int[] members, long timeoutNanos)
            implements Rendezvous {
        @Override
        public int size() {
            return members.length;
        }

        @Override
        public void publish(String name, String value) {
            store.set(group + "/" + name + "/" + rank, value);
        }

        @Override
        public String lookup(String name, int peer) {
            String v = store.getFrom(group + "/" + name + "/" + peer, members[peer]);
            if (v == null) {
                throw new PeerFailedException(peer, "rank " + rank + ": rank " + peer + " of " + group
                        + " (member " + members[peer] + ") died or left before it published its " + name, null);
            }
            return v;
        }

        @Override
        public InetAddress localAddress() {
            return store.localAddress();
        }

        @Override
        public boolean failed(int peer) {
            return store.failed(members[peer]);
        }
    }
}
