package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.internal.runtime.CommunicatorImpl;
import dev.panamax.collectives.internal.transport.local.HostAllocator;
import dev.panamax.collectives.internal.transport.local.LocalFabric;

import java.util.ArrayList;
import java.util.List;

/** Connects the ranks of one JVM (threads as ranks) over a {@link LocalFabric}: no rendezvous needed. */
public final class InJvmBootstrap {
    private InJvmBootstrap() {
    }

    /** {@code size} connected communicators, one per rank. */
    public static List<Communicator> create(int size, long timeoutNanos) {
        LocalFabric fabric = LocalFabric.create(size);
        Topology flat = Topology.flat(size, Topology.SHARED_MEMORY.bytesPerSecond(),
                Topology.SHARED_MEMORY.latencySeconds());
        List<Communicator> out = new ArrayList<>(size);
        for (int r = 0; r < size; r++) {
            int rank = r;
            out.add(new CommunicatorImpl(r, size, fabric.linksOf(r), timeoutNanos, new HostAllocator(), size, flat,
                    null,
                    () -> fabric.markClosed(rank)));
        }
        return List.copyOf(out);
    }
}
