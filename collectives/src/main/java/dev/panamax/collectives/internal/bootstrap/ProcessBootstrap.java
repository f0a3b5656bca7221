package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.CollectiveTimeoutException;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.LaunchConfig;
import dev.panamax.collectives.TransportKind;
import dev.panamax.collectives.internal.auth.MutualAuth;

import java.util.Arrays;
import java.util.stream.IntStream;

/**
 * Connects the communicator of one process: every rank meets the others at rank 0's rendezvous
 * store, publishes who it is (process id and {@linkplain HostIdentity host identity}), then a
 * transport selector connects a link to each peer over the first transport of the
 * {@link TransportKind}'s list that can reach it: shared memory to peers on this host and TCP to
 * the others for {@code auto}; only the forced one otherwise. Nobody leaves before everyone is
 * connected. The store stays open for the communicator's agreements and shrinks
 * ({@link StoreMembership}).
 */
public final class ProcessBootstrap {
    /** The name of the job's first communicator: its agreements and offspring are named from it. */
    static final String JOB = "job";

    private ProcessBootstrap() {
    }

    /**
     * Connects this process's communicator. {@code secret} is the job's secret (null or empty:
     * none, the job is unauthenticated); every rank must be given the same.
     */
    public static Communicator connect(LaunchConfig config, TransportKind kind, long timeoutNanos, String bindAddress,
                                       String secret) {
        int rank = config.rank();
        MutualAuth auth = MutualAuth.of(secret);
        StoreServer server = null;
        StoreMembership membership = null;
        try {
            if (rank == 0) {
                server = new StoreServer(config.masterAddr(), config.masterPort(), auth);
            }
            StoreClient store = StoreClient.connect(config.masterAddr(), config.masterPort(), timeoutNanos, rank,
                    auth);
            membership = new StoreMembership(server, store, kind, auth, bindAddress);
            if (rank == 0) {
                // Member ids past the job's ranks go to processes that join later (grow).
                store.add(StoreMembership.NEXT_MEMBER, config.worldSize());
            }
            int[] members = IntStream.range(0, config.worldSize()).toArray();
            return membership.connect(JOB, members, rank, timeoutNanos);
        } catch (RuntimeException e) {
            if (membership != null) {
                membership.closeIfUnused();
            } else if (server != null) {
                server.close();
            }
            throw e;
        }
    }

    /** The rank a joining process claims on its first store connection, before it has a member id. */
    private static final int JOINER = Integer.MAX_VALUE;

    /**
     * Joins a running job as a new rank: takes a ticket at the job's store (the config's master
     * address; its rank and size are not used), waits for a {@code grow} to hand it a member id and the
     * communicator to connect, then connects as that member.
     */
    public static Communicator join(LaunchConfig config, TransportKind kind, long timeoutNanos, String bindAddress,
            String secret) {
        MutualAuth auth = MutualAuth.of(secret);
        String[] ticket;
        try (StoreClient lobby = StoreClient.connect(config.masterAddr(), config.masterPort(), timeoutNanos, JOINER,
                auth)) {
            long n = lobby.add(StoreMembership.TICKETS_ASKED, 1);
            try {
                ticket = lobby.get(StoreMembership.TICKET + n).split(" ");
            } catch (CollectiveTimeoutException e) {
                throw new CollectiveTimeoutException("joining the job at " + config.masterAddr() + ":"
                        + config.masterPort() + ": no grow() took this process within "
                        + timeoutNanos / 1_000_000_000.0 + " s", e);
            }
        }
        int self = Integer.parseInt(ticket[1]);
        int[] members = Arrays.stream(ticket[2].split(",")).mapToInt(Integer::parseInt).toArray();
        StoreClient store = StoreClient.connect(config.masterAddr(), config.masterPort(), timeoutNanos, self, auth);
        StoreMembership membership = new StoreMembership(null, store, kind, auth, bindAddress);
        try {
            return membership.connect(ticket[0], members, self, timeoutNanos);
        } catch (RuntimeException e) {
            membership.closeIfUnused();
            throw e;
        }
    }
}
