package dev.panamax.collectives.internal.transport.shm;

import dev.panamax.collectives.PeerFailedException;
import dev.panamax.collectives.internal.config.Settings;
import dev.panamax.collectives.internal.transport.Link;
import dev.panamax.collectives.internal.transport.PeerInfo;
import dev.panamax.collectives.internal.transport.Rendezvous;
import dev.panamax.collectives.internal.transport.SharedWindow;
import dev.panamax.collectives.internal.transport.Transport;
import dev.panamax.memory.SharedMemory;
import dev.panamax.memory.concurrent.Doorbell;

/**
 * Shared memory between processes of one host: each rank creates one inbox with a block per peer
 * and publishes its handle; a peer maps it and writes its messages there (or, for buffers from
 * {@link ShmAllocator}, only a descriptor that the receiver maps and reads in place). See
 * {@link ShmLink} for the protocol.
 */
public final class ShmTransport implements Transport {
    private final ShmAllocator allocator;

    /** @param allocator the communicator's allocator, whose buffers peers may read in place */
    public ShmTransport(ShmAllocator allocator) {
        this.allocator = allocator;
    }

    @Override
    public String name() {
        return "shm";
    }

    /** Same host identity: host name and boot id, or the same {@code PANAMAX_NODE}. */
    @Override
    public boolean canConnect(PeerInfo self, PeerInfo peer) {
        return self.sameHost(peer);
    }

    @Override
    public Session connect(Rendezvous rendezvous, PeerInfo[] peers, Link[] links) {
        int rank = rendezvous.rank();
        SharedMemory.Region inbox = SharedMemory.create("inbox-" + rank, ShmLink.inboxBytes(rendezvous.size()));
        try {
            Doorbell doorbell = ShmLink.doorbellOf(inbox.segment());
            // Before the inbox is published: peers read the window's capacity as soon as they map it.
            SharedWindow.initialize(ShmLink.windowOf(inbox.segment()),
                    Settings.SHM_WINDOW_BYTES.intValue(0, (int) SharedWindow.MAX_CAPACITY_BYTES, "a byte count"));
            rendezvous.publish(name(), inbox.handle().encode());
            for (PeerInfo p : peers) {
                SharedMemory.Handle handle = SharedMemory.Handle.decode(rendezvous.lookup(name(), p.rank()));
                SharedMemory.Region peerInbox;
                try {
                    peerInbox = SharedMemory.attach(handle);
                } catch (IllegalStateException e) {
                    if (ShmLink.isAlive(p.pid())) {
                        throw e;
                    }
                    // It published its inbox, then died (a rank lost while the survivors of a shrink connect).
                    throw new PeerFailedException(p.rank(), "rank " + rank + ": rank " + p.rank() + " (pid " + p.pid()
                            + ") died before this rank mapped its inbox", e);
                }
                links[p.rank()] = new ShmLink(rank, p.rank(), p.pid(), inbox.segment(), doorbell, peerInbox,
                        allocator);
            }
        } catch (RuntimeException e) {
            inbox.close();
            throw e;
        }
        return inbox::close;
    }
}
