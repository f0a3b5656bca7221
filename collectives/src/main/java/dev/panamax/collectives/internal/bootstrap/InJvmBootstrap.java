package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.internal.transport.local.LocalFabric;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

/** Connects the ranks of one JVM (threads as ranks) over a {@link LocalFabric}: no rendezvous needed. */
public final class InJvmBootstrap {
    private InJvmBootstrap() {
    }

    /** {@code size} connected communicators, one per rank. */
    public static List<Communicator> create(int size, long timeoutNanos) {
        LocalFabric fabric = LocalFabric.create(size);
        InJvmMembership membership = new InJvmMembership(size);
        int[] members = IntStream.range(0, size).toArray();
        List<Communicator> out = new ArrayList<>(size);
        for (int r = 0; r < size; r++) {
            out.add(membership.create(fabric, r, members, ProcessBootstrap.JOB, timeoutNanos));
        }
        return List.copyOf(out);
    }
}
