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
 * rank looks up only peers that published.
 */
public final class CpuBoard {
    private static final String KEY = "cpu";
    private static final long BYTES = 64;

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
        try {
            SharedMemory.Region own = SharedMemory.create("cpu-" + self.rank(), BYTES);
            regions.add(own);
            rendezvous.publish(KEY, own.handle().encode());
            for (PeerInfo p : needing) {
                SharedMemory.Region theirs;
                try {
                    theirs = SharedMemory.attach(SharedMemory.Handle.decode(rendezvous.lookup(KEY, p.rank())));
                } catch (IllegalStateException gone) {
                    // It published, then exited: the link to it fails on its own; nothing to read meanwhile.
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
