package dev.panamax.collectives.internal.transport;

import dev.panamax.memory.SharedMemory;

import java.util.ArrayList;
import java.util.List;

/**
 * Where a rank publishes the CPU its waiting thread runs on for peers of its host that it reaches over a transport
 * without shared memory of its own (verbs, or TCP when chosen between ranks of one host), so that a wait over those
 * links can tell, as one over shared memory does, that the two ranks take turns on one CPU (the runtime's
 * {@code CpuSeparation}). Two ranks on one host exchanging over the RDMA adapter fell into that state in the
 * software-RoCE VM: 200-440 us per small message instead of 30-60 (docs/results/performance.md).
 *
 * <p>Each such rank creates one small shared-memory region, a word holding its CPU + 1 (0: not waiting), and
 * publishes its handle; each link to a same-host peer that cannot share CPUs otherwise gets this rank's word and the
 * peer's ({@link Link#shareCpuThrough}). Both ends of a pair decide alike (same host identity, same transport), so a
 * rank looks up only peers that published. It only speeds waits up: a region that cannot be created or mapped leaves
 * the pair without the words rather than failing the communicator.
 */
public final class CpuBoard {
    private static final String KEY = "cpu";
    private static final long BYTES = 64;
    /** Published instead of a handle by a rank that could not create its region. */
    private static final String NONE = "none";

    private CpuBoard() {
    }

    /**
     * Gives every link in {@code links} to a peer of {@code self}'s host that cannot share CPUs a published word on
     * each side. Returns what must outlive the links (the mappings), or null when no link needed one.
     */
    public static Transport.Session connect(Rendezvous rendezvous, PeerInfo self, PeerInfo[] peers, Link[] links) {
        List<PeerInfo> needing = new ArrayList<>();
        for (PeerInfo p : peers) {
            Link link = links[p.rank()];
            if (p.rank() != self.rank() && link != null && self.sameHost(p) && !link.canShareCpu()) {
                needing.add(p);
            }
        }
        if (needing.isEmpty()) {
            return null;
        }
        List<SharedMemory.Region> regions = new ArrayList<>();
        SharedMemory.Region own;
        try {
            own = SharedMemory.create("cpu-" + self.rank(), BYTES);
        } catch (RuntimeException e) {
            // Only an optimisation: the links work without it. Peers must still learn that there is nothing to map.
            rendezvous.publish(KEY, NONE);
            return null;
        }
        regions.add(own);
        try {
            rendezvous.publish(KEY, own.handle().encode());
            for (PeerInfo p : needing) {
                String handle = rendezvous.lookup(KEY, p.rank());
                if (NONE.equals(handle)) {
                    continue;
                }
                SharedMemory.Region theirs;
                try {
                    theirs = SharedMemory.attach(SharedMemory.Handle.decode(handle));
                } catch (RuntimeException e) {
                    // Exited, or its memory is not ours to map (another user): this pair shares no CPU word.
                    continue;
                }
                regions.add(theirs);
                links[p.rank()].shareCpuThrough(own.segment(), theirs.segment());
            }
        } catch (RuntimeException e) {
            closeAll(regions);
            throw e;
        }
        return () -> closeAll(regions);
    }

    private static void closeAll(List<SharedMemory.Region> regions) {
        for (SharedMemory.Region r : regions) {
            r.close();
        }
    }
}
