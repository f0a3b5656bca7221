package dev.panamax.collectives.internal.transport.verbs;

import dev.panamax.collectives.CollectiveException;
import dev.panamax.collectives.internal.config.Settings;
import dev.panamax.verbs.Access;
import dev.panamax.verbs.CompletionChannel;
import dev.panamax.verbs.CompletionQueue;
import dev.panamax.verbs.MemoryRegion;
import dev.panamax.verbs.PortInfo;
import dev.panamax.verbs.ProtectionDomain;
import dev.panamax.verbs.QpCapabilities;
import dev.panamax.verbs.QueuePair;
import dev.panamax.verbs.RegistrationCache;
import dev.panamax.verbs.Verbs;
import dev.panamax.verbs.VerbsContext;
import dev.panamax.verbs.VerbsException;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What the verbs links of one process's communicator share: the opened device, one protection
 * domain, and the registration cache through which user and scratch buffers are registered once
 * and then written to directly. Reference counted: the communicator holds one reference and every
 * link another, because links release their resources lazily (possibly after an abort, on another
 * thread); the device is closed when the last one lets go.
 *
 * <p>Settings (system property, then environment variable): {@code panamax.verbs.device} /
 * {@code PANAMAX_VERBS_DEVICE} (default: the first device), {@code panamax.verbs.port} /
 * {@code PANAMAX_VERBS_PORT} (1), {@code panamax.verbs.gidIndex} / {@code PANAMAX_VERBS_GID_INDEX}
 * (default: the first RoCE v2 GID of the port, else 0), {@code panamax.verbs.zeroCopy} /
 * {@code PANAMAX_VERBS_ZERO_COPY} ({@code true}; {@code false} sends everything through the
 * pre-registered staging buffers), {@code panamax.verbs.eagerBytes} / {@code PANAMAX_VERBS_EAGER_BYTES}
 * (8192; the largest message written without waiting for the receiver, 0 to 65536),
 * {@code panamax.verbs.inlineBytes} / {@code PANAMAX_VERBS_INLINE_BYTES} (256; the largest send copied into its
 * work request, 0 to 1024).
 */
public final class VerbsDomain {
    private static final System.Logger LOG = System.getLogger("dev.panamax.collectives");
    /** Registrations kept per communicator; the schedules of one call shape touch a handful of buffers. */
    private static final int CACHE_ENTRIES = 256;
    /** The largest inline size a setting may ask for; devices grant a few hundred bytes. */
    static final int MAX_INLINE_BYTES = 1024;

    final VerbsContext context;
    final ProtectionDomain pd;
    final int port;
    final int gidIndex;
    final int mtu;
    /** The completion channel of all the links' queues, and what a wait on them sleeps on. */
    final CompletionWakeSignal wakeSignal;
    private final RegistrationCache cache;
    private final boolean zeroCopy;
    /** The largest message this side sends and receives eagerly (a link uses the smaller of both sides'). */
    final int eagerBytes;
    /** The inline size links ask their queue pairs for; 0 once the device has refused it. */
    private volatile int inlineBytes;
    private final AtomicInteger refs = new AtomicInteger(1);
    private boolean warnedRegistration;

    private VerbsDomain(VerbsContext context, ProtectionDomain pd, CompletionChannel channel, int port, int gidIndex,
            int mtu, boolean zeroCopy, int eagerBytes, int inlineBytes) {
        this.context = context;
        this.wakeSignal = new CompletionWakeSignal(channel);
        this.pd = pd;
        this.port = port;
        this.gidIndex = gidIndex;
        this.mtu = mtu;
        this.zeroCopy = zeroCopy;
        this.eagerBytes = eagerBytes;
        this.inlineBytes = inlineBytes;
        this.cache = new RegistrationCache(pd, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ,
                CACHE_ENTRIES);
    }

    /** Opens the configured device; a clear error when libibverbs or a device is missing. */
    public static VerbsDomain open() {
        if (!Verbs.isAvailable()) {
            throw new CollectiveException("transport verbs: libibverbs is not available: "
                    + Verbs.unavailabilityCause());
        }
        String device = Settings.VERBS_DEVICE.value();
        int port = Integer.parseInt(Settings.VERBS_PORT.value(Settings.VERBS_PORT.defaultValue()));
        String gid = Settings.VERBS_GID_INDEX.value();
        boolean zeroCopy =
                Boolean.parseBoolean(Settings.VERBS_ZERO_COPY.value(Settings.VERBS_ZERO_COPY.defaultValue()));
        int eagerBytes = eagerBytes();
        int inlineBytes = inlineBytes();
        if (Verbs.devices().isEmpty()) {
            throw new CollectiveException("transport verbs: no RDMA device found (ibv_get_device_list returned none)");
        }
        VerbsContext ctx = Verbs.open(device);
        try {
            PortInfo info = ctx.queryPort(port);
            if (!info.isActive()) {
                throw new CollectiveException("transport verbs: port " + port + " of " + ctx.deviceName()
                        + " is not active (state "
                        + info.state() + ")");
            }
            int gidIndex = gid != null ? Integer.parseInt(gid) : Math.max(0, ctx.findRoceV2GidIndex(port));
            ProtectionDomain pd = ctx.allocateProtectionDomain();
            CompletionChannel channel = ctx.createCompletionChannel();
            return new VerbsDomain(ctx, pd, channel, port, gidIndex, info.activeMtu(), zeroCopy, eagerBytes,
                    inlineBytes);
        } catch (RuntimeException e) {
            ctx.close();
            throw e;
        }
    }

    /** The eager threshold setting, checked before any device is opened. */
    static int eagerBytes() {
        return Settings.VERBS_EAGER_BYTES.intValue(0, VerbsLink.MAX_EAGER_BYTES, "a byte count");
    }

    /** The inline size setting, checked before any device is opened. */
    static int inlineBytes() {
        return Settings.VERBS_INLINE_BYTES.intValue(0, MAX_INLINE_BYTES, "a byte count");
    }

    /**
     * A reliable queue pair of {@code sendWrs} and {@code recvWrs} work requests on {@code cq}, asking for the
     * configured inline size; when the device refuses that, it is dropped for this domain (with a warning, once)
     * and the queue pair made without it.
     */
    QueuePair createQueuePair(CompletionQueue cq, int sendWrs, int recvWrs) {
        int inline = inlineBytes;
        if (inline > 0) {
            try {
                return pd.createReliableQueuePair(cq, cq, new QpCapabilities(sendWrs, recvWrs, 1, 1, inline));
            } catch (VerbsException e) {
                synchronized (this) {
                    if (inlineBytes > 0) {
                        inlineBytes = 0;
                        LOG.log(System.Logger.Level.WARNING, "verbs: " + context.deviceName() + " refused " + inline
                                + " bytes of inline data per send, sending without (" + e.getMessage() + ")");
                    }
                }
            }
        }
        return pd.createReliableQueuePair(cq, cq, new QpCapabilities(sendWrs, recvWrs, 1, 1, 0));
    }

    /** The most a link sends inline on {@code qp}: the setting, capped by what the device granted. */
    int inlineBytes(QueuePair qp) {
        return Math.min(inlineBytes, qp.capabilities().maxInlineData());
    }

    /**
     * The memory region covering {@code segment}, registering it on first use; null when the
     * segment cannot be registered (the caller then goes through its staging buffers). Called by
     * the thread that holds the communicator's lock.
     */
    MemoryRegion registered(MemorySegment segment) {
        if (!zeroCopy || segment.byteSize() == 0 || !segment.isNative()) {
            return null;
        }
        try {
            return cache.get(segment);
        } catch (VerbsException e) {
            // Typically ENOMEM from the locked-memory limit: correct, only slower, through staging.
            if (!warnedRegistration) {
                warnedRegistration = true;
                LOG.log(System.Logger.Level.WARNING, "verbs: registering a " + segment.byteSize()
                        + "-byte buffer failed, using staging copies instead (" + e.getMessage() + ")");
            }
            return null;
        }
    }

    /** Registers the whole buffers of a call up front, so that the slices the links see are covered. */
    public void register(MemorySegment[] buffers, int count) {
        for (int i = 0; i < count; i++) {
            if (buffers[i] != null) {
                registered(buffers[i]);
            }
        }
    }

    void retain() {
        refs.incrementAndGet();
    }

    /**
     * Drops one reference; the last closes the cache, the protection domain, the completion channel (every link's
     * queue is gone by then) and the device.
     */
    public void release() {
        if (refs.decrementAndGet() == 0) {
            try {
                cache.close();
            } finally {
                try {
                    pd.close();
                } finally {
                    try {
                        wakeSignal.channel().close();
                    } finally {
                        context.close();
                    }
                }
            }
        }
    }
}
