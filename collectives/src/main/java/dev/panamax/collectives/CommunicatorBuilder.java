package dev.panamax.collectives;

import dev.panamax.collectives.internal.bootstrap.ProcessBootstrap;
import dev.panamax.collectives.internal.config.Settings;
import dev.panamax.collectives.internal.config.WaitRule;

import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;

/**
 * Configures and connects the communicator of one process: rendezvous through the TCP store at
 * {@code masterAddr:masterPort} (run by rank 0), then one transport per peer: shared memory for
 * peers on this host, TCP otherwise, unless {@link #transport} forces one.
 */
public final class CommunicatorBuilder {
    /** Default timeout of every wait: 5 minutes. */
    public static final long DEFAULT_TIMEOUT_NANOS = Duration.ofMinutes(5).toNanos();

    private LaunchConfig config;
    private TransportKind transport = TransportKind.AUTO;
    private long timeoutNanos = DEFAULT_TIMEOUT_NANOS;
    private String bindAddress;
    private String secret;
    private Topology topology;
    private boolean validate = Settings.VALIDATE.isOn();
    private boolean deterministic = Settings.DETERMINISTIC.isOn();
    private final Map<Collective, String> algorithms = new EnumMap<>(Collective.class);

    /** Starts from the knobs of the environment and system properties (docs/reference/configuration.md). */
    CommunicatorBuilder() {
        String t = Settings.TRANSPORT.value();
        if (t != null) {
            transport = TransportKind.parse(t);
        }
        String timeout = Settings.TIMEOUT_SECONDS.value();
        if (timeout != null) {
            timeoutNanos = (long) (Double.parseDouble(timeout) * 1e9);
        }
        String top = Settings.TOPOLOGY.value();
        if (top != null) {
            topology = Topology.parse(top);
        }
        secret = Settings.SECRET.raw();
        String alg = Settings.ALGORITHM.value();
        if (alg != null) {
            algorithms.putAll(parseAlgorithms(alg));
        }
        WaitRule.fromSettings(); // a bad PANAMAX_WAIT fails here, before connecting (each communicator reads it again)
    }

    /**
     * Parses {@code PANAMAX_ALGORITHM}: {@code name} (for all-reduce) or
     * {@code collective=name,collective=name}, e.g. {@code allreduce=blueconnect,broadcast=ring}.
     */
    static Map<Collective, String> parseAlgorithms(String spec) {
        Map<Collective, String> out = new EnumMap<>(Collective.class);
        for (String part : spec.split(",")) {
            String p = part.trim();
            if (p.isEmpty()) {
                continue;
            }
            int eq = p.indexOf('=');
            if (eq < 0) {
                out.put(Collective.ALL_REDUCE, p);
            } else {
                out.put(Collective.parse(p.substring(0, eq)), p.substring(eq + 1).trim());
            }
        }
        return out;
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

    /**
     * The job's secret (default: property {@code panamax.secret}, else {@code PANAMAX_SECRET}).
     * Every rank must be given the same string; it keys the HMAC-SHA256 challenge-response that
     * each store connection and each rank-to-rank TCP connection starts with, so a process without
     * it cannot join or pose as a rank. Use at least 16 characters, for example 32 hex digits from
     * {@code /dev/urandom} ({@code scripts/panamax-run} generates one). With no secret anywhere the
     * job runs unauthenticated and a WARNING says so once.
     */
    public CommunicatorBuilder secret(String secret) {
        this.secret = Objects.requireNonNull(secret, "secret");
        return this;
    }

    /**
     * The network hierarchy for hierarchical algorithms and the planner (default: detected from
     * the hosts, or {@code PANAMAX_TOPOLOGY}, e.g. {@code 2x2:bw=5G,100M}).
     */
    public CommunicatorBuilder topology(Topology topology) {
        this.topology = Objects.requireNonNull(topology, "topology");
        return this;
    }

    /** The algorithm for {@code collective} (default {@code auto}, or {@code PANAMAX_ALGORITHM}). */
    public CommunicatorBuilder algorithm(Collective collective, String algorithm) {
        algorithms.put(Objects.requireNonNull(collective, "collective"),
                Objects.requireNonNull(algorithm, "algorithm"));
        return this;
    }

    /** Cross-rank call validation (default off, or {@code PANAMAX_VALIDATE=1}); see {@link
     * Communicator#setCallValidation}. */
    public CommunicatorBuilder validateCalls(boolean on) {
        this.validate = on;
        return this;
    }

    /** Deterministic mode (default off, or {@code PANAMAX_DETERMINISTIC=1}); see {@link Communicator#setDeterministic}.
     * */
    public CommunicatorBuilder deterministic(boolean on) {
        this.deterministic = on;
        return this;
    }

    /** Runs the rendezvous and connects every peer; blocks until all ranks have joined or the timeout passes. */
    public Communicator connect() {
        if (config == null) {
            config = LaunchConfig.fromEnvironment();
        }
        return configured(ProcessBootstrap.connect(config, transport, timeoutNanos, bindAddress, secret));
    }

    /**
     * Joins a running job as a new rank, for example a replacement for a rank that was lost: reaches
     * the job's rendezvous store (the config's master address and port, as {@link #connect()}; its
     * rank and world size are not used), waits there until the job's ranks call
     * {@link Communicator#grow}, and returns the grown communicator, in which this process has one of
     * the new ranks. Give it the job's transport and secret. Blocks up to the timeout.
     *
     * @throws CollectiveTimeoutException when no grow took this process within the timeout
     */
    public Communicator join() {
        if (config == null) {
            config = LaunchConfig.fromEnvironment();
        }
        return configured(ProcessBootstrap.join(config, transport, timeoutNanos, bindAddress, secret));
    }

    /** {@code c} with this builder's topology, algorithms, validation and determinism; closed if they fail. */
    private Communicator configured(Communicator c) {
        try {
            if (topology != null) {
                c.setTopology(topology);
            }
            algorithms.forEach(c::setAlgorithm);
            c.setCallValidation(validate);
            c.setDeterministic(deterministic);
        } catch (RuntimeException e) {
            c.close();
            throw e;
        }
        return c;
    }
}
