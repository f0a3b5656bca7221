package dev.panamax.collectives;

import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * Configures and connects the communicator of one process: rendezvous through the TCP store at
 * {@code masterAddr:masterPort} (run by rank 0), then one transport per peer: shared memory for
 * peers on this host, TCP otherwise, unless {@link #transport} forces one.
 */
public final class CommunicatorBuilder {
    /** Default timeout of every wait: 5 minutes. */
    public static final long DEFAULT_TIMEOUT_NANOS = Duration.ofMinutes(5).toNanos();

    /** Transport selection. */
    public enum TransportKind {
        /** Shared memory to same-host peers, TCP to the others. */
        AUTO,
        /** Shared memory to every peer (all must share this host). */
        SHM,
        /** TCP to every peer. */
        TCP;

        public static TransportKind parse(String s) {
            try {
                return valueOf(s.toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("unknown transport '" + s + "'; known: auto, shm, tcp");
            }
        }
    }

    private LaunchConfig config;
    private TransportKind transport = TransportKind.AUTO;
    private long timeoutNanos = DEFAULT_TIMEOUT_NANOS;
    private String bindAddress;

    CommunicatorBuilder() {
        String t = System.getProperty("panamax.transport", System.getenv("PANAMAX_TRANSPORT"));
        if (t != null && !t.isBlank()) {
            transport = TransportKind.parse(t.trim());
        }
        String timeout = System.getProperty("panamax.timeout.seconds", System.getenv("PANAMAX_TIMEOUT_SECONDS"));
        if (timeout != null && !timeout.isBlank()) {
            timeoutNanos = (long) (Double.parseDouble(timeout.trim()) * 1e9);
        }
    }

    /** Rank, size and rendezvous address. */
    public CommunicatorBuilder config(LaunchConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        return this;
    }

    /** Forces a transport (default {@link TransportKind#AUTO}, or {@code PANAMAX_TRANSPORT}). */
    public CommunicatorBuilder transport(TransportKind kind) {
        this.transport = Objects.requireNonNull(kind, "kind");
        return this;
    }

    /** The timeout of every wait (default 5 minutes, or {@code PANAMAX_TIMEOUT_SECONDS}). */
    public CommunicatorBuilder timeout(Duration timeout) {
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive: " + timeout);
        }
        this.timeoutNanos = timeout.toNanos();
        return this;
    }

    /** The local address TCP data connections listen on (default: the address used to reach the master). */
    public CommunicatorBuilder bindAddress(String address) {
        this.bindAddress = address;
        return this;
    }

    /** Runs the rendezvous and connects every peer; blocks until all ranks have joined or the timeout passes. */
    public Communicator connect() {
        if (config == null) {
            config = LaunchConfig.fromEnvironment();
        }
        return dev.panamax.collectives.internal.ProcessGroup.connect(config, transport, timeoutNanos, bindAddress);
    }
}
