package dev.panamax.verbs;

import dev.panamax.bindings.Errno;
import dev.panamax.bindings.verbs.ibv_device_attr;
import dev.panamax.bindings.verbs.ibv_gid;
import dev.panamax.bindings.verbs.ibv_port_attr;
import dev.panamax.bindings.verbs.support.VerbsErrno;
import dev.panamax.bindings.verbs.support.VerbsGid;
import dev.panamax.bindings.verbs.support.VerbsInline;
import dev.panamax.bindings.verbs.verbs_h;
import dev.panamax.memory.internal.Closer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An open RDMA device ({@code struct ibv_context}). It owns the protection domains, completion queues and
 * completion channels created from it: {@link #close()} closes them (queue pairs first, then completion queues,
 * completion channels, memory regions and protection domains) before closing the device. Obtained from
 * {@link Verbs#open(String)}.
 */
public final class VerbsContext implements AutoCloseable {
    private final MemorySegment context;
    private final String deviceName;
    private final Set<ProtectionDomain> domains = ConcurrentHashMap.newKeySet();
    private final Set<CompletionQueue> completionQueues = ConcurrentHashMap.newKeySet();
    private final Set<CompletionChannel> completionChannels = ConcurrentHashMap.newKeySet();
    private boolean closed;

    VerbsContext(MemorySegment context, String deviceName) {
        this.context = context;
        this.deviceName = deviceName;
    }

    /** The device name, for example {@code rxe0}. */
    public String deviceName() {
        return deviceName;
    }

    MemorySegment handle() {
        return context;
    }

    /** The attributes of a port (ports are numbered from 1). */
    public PortInfo queryPort(int port) {
        requireOpen();
        checkPort(port);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(ibv_port_attr.layout());
            int rc = VerbsInline.ibv_query_port(context, (byte) port, attr);
            if (rc != 0) {
                throw VerbsException.returned("ibv_query_port", rc, "port " + port + " of " + deviceName);
            }
            return new PortInfo(ibv_port_attr.state(attr), ibv_port_attr.active_mtu(attr),
                    ibv_port_attr.max_mtu(attr), Short.toUnsignedInt(ibv_port_attr.lid(attr)),
                    Byte.toUnsignedInt(ibv_port_attr.link_layer(attr)), ibv_port_attr.gid_tbl_len(attr));
        }
    }

    /** The 16 bytes of a GID table entry (all zero for an empty entry). */
    public byte[] queryGid(int port, int gidIndex) {
        requireOpen();
        checkPort(port);
        if (gidIndex < 0) {
            throw new IllegalArgumentException("gidIndex must be >= 0: " + gidIndex);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment gid = arena.allocate(ibv_gid.layout());
            int rc = verbs_h.ibv_query_gid(context, (byte) port, gidIndex, gid);
            if (rc != 0) {
                throw VerbsException.returned("ibv_query_gid", rc,
                        "GID index " + gidIndex + " of port " + port + " of " + deviceName);
            }
            return gid.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    /**
     * The GID index to connect queue pairs with on this port: the first RoCE v2 GID that is an IPv4-mapped
     * address if there is one, else the first RoCE v2 GID, else (when the library cannot tell GID types) the
     * first IPv4-mapped GID, else the first non-zero GID (on InfiniBand, index 0). {@code -1} when the table
     * has no GID.
     */
    public int findRoceV2GidIndex(int port) {
        requireOpen();
        PortInfo info = queryPort(port);
        int best = -1;
        int bestScore = -1;
        for (GidEntry e : gids(port, info.gidTableLength())) {
            if (Gids.isZero(e.gid)) {
                continue;
            }
            boolean v2 = e.type == VerbsGid.IBV_GID_TYPE_ROCE_V2;
            boolean ipv4 = Gids.isIpv4Mapped(e.gid);
            int score = v2 && ipv4 ? 3 : v2 ? 2 : e.type == TYPE_UNKNOWN && ipv4 ? 1 : 0;
            if (score > bestScore || score == bestScore && e.index < best) {
                best = e.index;
                bestScore = score;
            }
        }
        return best;
    }

    private static final int TYPE_UNKNOWN = -1;

    private record GidEntry(int index, byte[] gid, int type) {
    }

    /** The non-empty GIDs of a port, with their types where the library reports them. */
    private List<GidEntry> gids(int port, int tableLength) {
        List<GidEntry> out = new ArrayList<>();
        if (VerbsGid.isSupported()) {
            try (Arena arena = Arena.ofConfined()) {
                long max = (long) tableLength * physicalPortCount(arena);
                MemorySegment entries = arena.allocate(VerbsGid.layout(), Math.max(max, 1));
                long n = VerbsGid.ibv_query_gid_table(context, entries, max, 0);
                if (n >= 0) {
                    for (long i = 0; i < n; i++) {
                        MemorySegment entry = entries.asSlice(i * VerbsGid.layout().byteSize(), VerbsGid.layout());
                        if (VerbsGid.port_num(entry) == port) {
                            out.add(new GidEntry(VerbsGid.gid_index(entry),
                                    VerbsGid.gid(entry).toArray(ValueLayout.JAVA_BYTE),
                                    VerbsGid.gid_type(entry)));
                        }
                    }
                    out.sort((a, b) -> Integer.compare(a.index, b.index));
                    return out;
                }
                // fall through to the per-index query below
            }
        }
        for (int i = 0; i < tableLength; i++) {
            byte[] gid = queryGid(port, i);
            if (!Gids.isZero(gid)) {
                out.add(new GidEntry(i, gid, TYPE_UNKNOWN));
            }
        }
        return out;
    }

    private int physicalPortCount(Arena arena) {
        MemorySegment attr = arena.allocate(ibv_device_attr.layout());
        int rc = verbs_h.ibv_query_device(context, attr);
        if (rc != 0) {
            throw VerbsException.returned("ibv_query_device", rc, deviceName);
        }
        return Math.max(1, Byte.toUnsignedInt(ibv_device_attr.phys_port_cnt(attr)));
    }

    /** A new protection domain, owned by this context. */
    public ProtectionDomain allocateProtectionDomain() {
        synchronized (this) {
            requireOpen();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment errno = Errno.allocate(arena);
                MemorySegment pd = VerbsErrno.ibv_alloc_pd(errno, context);
                if (pd.address() == 0) {
                    throw VerbsException.errno("ibv_alloc_pd", Errno.errno(errno), deviceName);
                }
                ProtectionDomain domain = new ProtectionDomain(this, pd);
                domains.add(domain);
                return domain;
            }
        }
    }

    /**
     * A new completion queue of at least {@code entries} entries, owned by this context. Size it for every
     * completion that can be outstanding at once (signaled sends plus posted receives of all queue pairs
     * using it); a full queue is a fatal error for the queue pairs.
     */
    public CompletionQueue createCompletionQueue(int entries) {
        return createQueue(entries, null);
    }

    /**
     * As {@link #createCompletionQueue(int)}, for a queue that signals {@code channel} when a completion arrives
     * after a {@link CompletionQueue#requestNotification()}, so that a thread can sleep on the channel instead of
     * polling. Several queues may share one channel.
     */
    public CompletionQueue createCompletionQueue(int entries, CompletionChannel channel) {
        if (channel == null) {
            throw new IllegalArgumentException("channel must not be null (use createCompletionQueue(int))");
        }
        if (channel.context() != this) {
            throw new IllegalArgumentException(channel + " belongs to another device context");
        }
        return createQueue(entries, channel);
    }

    private CompletionQueue createQueue(int entries, CompletionChannel channel) {
        if (entries < 1) {
            throw new IllegalArgumentException("entries must be >= 1: " + entries);
        }
        synchronized (this) {
            requireOpen();
            if (channel != null) {
                channel.requireOpen();
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment errno = Errno.allocate(arena);
                MemorySegment cq = VerbsErrno.ibv_create_cq(errno, context, entries, MemorySegment.NULL,
                        channel == null ? MemorySegment.NULL : channel.handle(), 0);
                if (cq.address() == 0) {
                    throw VerbsException.errno("ibv_create_cq", Errno.errno(errno),
                            entries + " entries on " + deviceName);
                }
                CompletionQueue queue = new CompletionQueue(this, cq, channel);
                completionQueues.add(queue);
                return queue;
            }
        }
    }

    /**
     * A new completion channel, owned by this context: a descriptor a thread can sleep on until a completion
     * queue created on it receives a completion.
     */
    public CompletionChannel createCompletionChannel() {
        synchronized (this) {
            requireOpen();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment errno = Errno.allocate(arena);
                MemorySegment ch = VerbsErrno.ibv_create_comp_channel(errno, context);
                if (ch.address() == 0) {
                    throw VerbsException.errno("ibv_create_comp_channel", Errno.errno(errno), deviceName);
                }
                CompletionChannel channel;
                try {
                    channel = new CompletionChannel(this, ch);
                } catch (RuntimeException e) {
                    verbs_h.ibv_destroy_comp_channel(ch);
                    throw e;
                }
                completionChannels.add(channel);
                return channel;
            }
        }
    }

    /** Whether {@link #close()} has not been called. */
    public synchronized boolean isOpen() {
        return !closed;
    }

    /**
     * Closes the queue pairs of all protection domains, then the completion queues, then the memory regions
     * and protection domains, then the device. Idempotent.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        Closer closer = new Closer();
        for (ProtectionDomain pd : List.copyOf(domains)) {
            closer.run(pd::closeQueuePairs);
        }
        for (CompletionQueue cq : List.copyOf(completionQueues)) {
            closer.run(cq::close);
        }
        for (CompletionChannel channel : List.copyOf(completionChannels)) {
            closer.run(channel::close);
        }
        for (ProtectionDomain pd : List.copyOf(domains)) {
            closer.run(pd::close);
        }
        closer.run(() -> {
            int rc = verbs_h.ibv_close_device(context);
            if (rc != 0) {
                throw VerbsException.returned("ibv_close_device", rc, deviceName);
            }
        });
        closer.rethrow();
    }

    void forget(ProtectionDomain pd) {
        domains.remove(pd);
    }

    void forget(CompletionQueue cq) {
        completionQueues.remove(cq);
    }

    void forget(CompletionChannel channel) {
        completionChannels.remove(channel);
    }

    void requireOpen() {
        if (!isOpen()) {
            throw new IllegalStateException("verbs context of " + deviceName + " is closed");
        }
    }

    private static void checkPort(int port) {
        if (port < 1 || port > 255) {
            throw new IllegalArgumentException("port must be 1..255: " + port);
        }
    }

    @Override
    public String toString() {
        return "VerbsContext[" + deviceName + (isOpen() ? "" : ", closed") + "]";
    }
}
