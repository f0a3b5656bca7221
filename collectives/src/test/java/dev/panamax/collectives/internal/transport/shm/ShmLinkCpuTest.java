package dev.panamax.collectives.internal.transport.shm;

import dev.panamax.memory.SharedMemory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The CPU a rank publishes in its inbox is what its peers' links read, and withdrawing it reads as none. */
@EnabledOnOs(OS.LINUX)
class ShmLinkCpuTest {
    @Test
    void aRanksPublishedCpuIsReadByEachPeerUntilWithdrawn() {
        long pid = ProcessHandle.current().pid();
        SharedMemory.Region[] inboxes = new SharedMemory.Region[3];
        for (int r = 0; r < 3; r++) {
            inboxes[r] = SharedMemory.create("inbox-" + r, ShmLink.inboxBytes(3));
        }
        ShmAllocator allocator = new ShmAllocator();
        // rank r's link to rank p, for every ordered pair
        ShmLink[][] links = new ShmLink[3][3];
        try {
            for (int r = 0; r < 3; r++) {
                for (int p = 0; p < 3; p++) {
                    if (p != r) {
                        links[r][p] = new ShmLink(r, p, pid, inboxes[r].segment(),
                                ShmLink.doorbellOf(inboxes[r].segment()),
                                SharedMemory.attach(inboxes[p].handle()), allocator);
                    }
                }
            }
            assertEquals(-1, links[1][0].peerCpu(), "fresh inbox: nothing published");

            assertTrue(links[0][1].canShareCpu());
            links[0][1].shareCpu(5);
            assertEquals(5, links[1][0].peerCpu());
            assertEquals(5, links[2][0].peerCpu(), "one word per rank, read by every peer");
            assertEquals(-1, links[0][1].peerCpu(), "rank 1 published nothing");

            links[0][2].shareCpu(0);
            assertEquals(0, links[1][0].peerCpu(), "any link of the rank publishes the same word");
            links[0][1].shareCpu(-1);
            assertEquals(-1, links[2][0].peerCpu());
        } finally {
            for (ShmLink[] row : links) {
                for (ShmLink l : row) {
                    if (l != null) {
                        l.close();
                    }
                }
            }
            for (SharedMemory.Region inbox : inboxes) {
                inbox.close();
            }
        }
    }
}
