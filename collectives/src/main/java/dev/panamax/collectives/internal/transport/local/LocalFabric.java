package dev.panamax.collectives.internal.transport.local;

import dev.panamax.collectives.internal.transport.Link;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The in-JVM transport: ranks are threads of one process, connected by a mailbox per ordered pair
 * of ranks. A send hands the receiver a reference to the sender's segment; the receiver copies or
 * reduces straight out of it (one pass, no staging) and then completes the send ({@link LocalLink}).
 */
public final class LocalFabric {
    private final int size;
    final ConcurrentLinkedQueue<Message>[][] boxes;
    private final String[] closed;
    private final int[] blamed;

    @SuppressWarnings("unchecked")
    private LocalFabric(int size) {
        this.size = size;
        this.boxes = new ConcurrentLinkedQueue[size][size];
        for (int i = 0; i < size; i++) {
            for (int j = 0; j < size; j++) {
                boxes[i][j] = new ConcurrentLinkedQueue<>();
            }
        }
        this.closed = new String[size];
        this.blamed = new int[size];
        Arrays.fill(blamed, -1);
    }

    /** A fabric of {@code size} ranks. */
    public static LocalFabric create(int size) {
        if (size < 1) {
            throw new IllegalArgumentException("group size must be >= 1: " + size);
        }
        return new LocalFabric(size);
    }

    /** The links of {@code rank}, indexed by peer ({@code null} at {@code rank} itself). */
    public Link[] linksOf(int rank) {
        Link[] links = new Link[size];
        for (int p = 0; p < size; p++) {
            if (p != rank) {
                links[p] = new LocalLink(this, rank, p);
            }
        }
        return links;
    }

    /** Records that {@code rank} closed its communicator, so its peers' waits fail naming it. */
    public synchronized void markClosed(int rank) {
        markClosed(rank, -1);
    }

    synchronized void markClosed(int rank, int failed) {
        if (closed[rank] == null) {
            closed[rank] = "rank " + rank + " closed its communicator";
            blamed[rank] = failed;
        }
    }

    /** The rank that {@code rank} blamed when it gave up, or -1. */
    synchronized int blamed(int rank) {
        return blamed[rank];
    }

    synchronized String closedReason(int rank) {
        return closed[rank];
    }

    /** One message in a mailbox: a view of the sender's segment, consumed by the receiver. */
    static final class Message {
        final MemorySegment data;
        volatile boolean consumed;
        volatile String error;

        Message(MemorySegment data) {
            this.data = data;
        }
    }
}
