package dev.panamax.collectives.internal.transport;

import java.net.InetAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/** A rendezvous board in memory for transport tests whose ranks are threads of one process. */
public final class MemoryRendezvous {
    private final Map<String, String> values = new ConcurrentHashMap<>();
    private final int size;
    private final long timeoutNanos;

    public MemoryRendezvous(int size, long timeoutNanos) {
        this.size = size;
        this.timeoutNanos = timeoutNanos;
    }

    /** The board as rank {@code rank} sees it: it publishes under its rank and waits for a peer's value. */
    public Rendezvous as(int rank) {
        return new Rendezvous() {
            @Override
            public int rank() {
                return rank;
            }

            @Override
            public int size() {
                return size;
            }

            @Override
            public long timeoutNanos() {
                return timeoutNanos;
            }

            @Override
            public void publish(String name, String value) {
                values.put(name + "/" + rank, value);
            }

            @Override
            public String lookup(String name, int peer) {
                long deadline = System.nanoTime() + timeoutNanos;
                String v;
                while ((v = values.get(name + "/" + peer)) == null) {
                    if (System.nanoTime() - deadline > 0) {
                        throw new AssertionError("rank " + rank + ": rank " + peer + " published no '" + name
                                + "' within " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms");
                    }
                    LockSupport.parkNanos(100_000);
                }
                return v;
            }

            @Override
            public InetAddress localAddress() {
                return InetAddress.getLoopbackAddress();
            }
        };
    }
}
