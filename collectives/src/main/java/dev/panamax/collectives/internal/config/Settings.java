package dev.panamax.collectives.internal.config;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Every knob of the collectives module in one place, as Aeron's {@code Configuration}: its
 * environment variable, its system property, its default and one line saying what it does. Code
 * reads a knob through its constant here, never by name, and the configuration reference in
 * {@code docs/} is checked against {@link #all()}.
 *
 * <p>A system property wins over the environment variable; a blank value counts as unset.
 */
public final class Settings {
    private static final List<Knob> ALL = new ArrayList<>();

    /** One knob. {@code property} or {@code env} may be null where the knob has only the other. */
    public record Knob(String env, String property, String defaultValue, String doc, List<String> aliases) {
        /** The property when set, else the environment variable (then its aliases); null when none is set. Untrimmed.
         * */
        public String raw() {
            String v = property == null ? null : System.getProperty(property);
            if (v != null && !v.isBlank()) {
                return v;
            }
            for (String name : envNames()) {
                String e = System.getenv(name);
                if (e != null && !e.isBlank()) {
                    return e;
                }
            }
            return null;
        }

        /** {@link #raw()}, trimmed; null when unset. */
        public String value() {
            String v = raw();
            return v == null ? null : v.trim();
        }

        /** {@link #value()}, or {@code fallback} when unset. */
        public String value(String fallback) {
            String v = value();
            return v == null ? fallback : v;
        }

        /** True when the value is 1, true or yes (any case). */
        public boolean isOn() {
            String v = value();
            return v != null && (v.equals("1") || v.equalsIgnoreCase("true") || v.equalsIgnoreCase("yes"));
        }

        /** False only when the value is 0, false or no (any case); unset means {@code defaultOn}. */
        public boolean isOn(boolean defaultOn) {
            String v = value();
            if (v == null) {
                return defaultOn;
            }
            return !(v.equals("0") || v.equalsIgnoreCase("false") || v.equalsIgnoreCase("no"));
        }

        /**
         * {@link #value()} or the default, as a whole number from {@code min} to {@code max}; otherwise throws an
         * {@link IllegalArgumentException} naming the knob, {@code what} it takes and the value given.
         */
        public int intValue(int min, int max, String what) {
            String v = value(defaultValue);
            try {
                int n = Integer.parseInt(v);
                if (n >= min && n <= max) {
                    return n;
                }
            } catch (NumberFormatException e) {
                // named below
            }
            throw new IllegalArgumentException(name() + ": " + what + " from " + min + " to " + max + ", not '" + v
                    + "'");
        }

        /** The environment variable first, then the aliases read after it. */
        public List<String> envNames() {
            List<String> out = new ArrayList<>();
            if (env != null) {
                out.add(env);
            }
            out.addAll(aliases);
            return out;
        }

        /** The name to quote in messages: the environment variable, else the property. */
        public String name() {
            return env != null ? env : property;
        }
    }

    // ---- where this process stands in the job (read by LaunchConfig.fromEnvironment) ------------

    public static final Knob RANK = launch("PANAMAX_RANK", null,
            "this process's rank in the job", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID");
    public static final Knob WORLD_SIZE = launch("PANAMAX_WORLD_SIZE", null,
            "the number of ranks in the job", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS");
    public static final Knob LOCAL_RANK = launch("PANAMAX_LOCAL_RANK", "the rank",
            "this process's rank among those of its host", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID");
    public static final Knob MASTER_ADDR = launch("PANAMAX_MASTER_ADDR", "127.0.0.1",
            "address of rank 0's rendezvous store, which listens there only", "MASTER_ADDR");
    public static final Knob MASTER_PORT = launch("PANAMAX_MASTER_PORT", "29500",
            "port of rank 0's rendezvous store", "MASTER_PORT");

    // ---- how the communicator connects and behaves (read by CommunicatorBuilder) ----------------

    public static final Knob TRANSPORT = knob("PANAMAX_TRANSPORT", "panamax.transport", "auto",
            "auto (shared memory to same-host peers, TCP to the others), shm, tcp or verbs");
    public static final Knob TIMEOUT_SECONDS = knob("PANAMAX_TIMEOUT_SECONDS", "panamax.timeout.seconds", "300",
            "the timeout of every wait, in seconds (fractions allowed)");
    public static final Knob TOPOLOGY = knob("PANAMAX_TOPOLOGY", "panamax.topology", "detected from the hosts",
            "the network hierarchy, innermost level first, e.g. 2x2:bw=20G,5G:alpha=1us,10us");
    public static final Knob ALGORITHM = knob("PANAMAX_ALGORITHM", "panamax.algorithm", "auto",
            "the algorithm of all-reduce, or per collective: allreduce=blueconnect,broadcast=ring");
    public static final Knob SECRET = knob("PANAMAX_SECRET", "panamax.secret", "none (unauthenticated, with a warning)",
            "the job's secret (16+ characters), proven by every store and rank-to-rank TCP connection");
    public static final Knob VALIDATE = knob("PANAMAX_VALIDATE", "panamax.validate", "false",
            "check before each collective that all ranks made the same call (one small all-gather)");
    public static final Knob DETERMINISTIC = knob("PANAMAX_DETERMINISTIC", "panamax.deterministic", "false",
            "choose algorithms from the call and rank count only, never from a detected topology");
    public static final Knob NODE = knob("PANAMAX_NODE", "panamax.node", "host name and boot id",
            "the host identity: ranks with the same value share memory, the others use TCP (emulates nodes)");
    public static final Knob WAIT = knob("PANAMAX_WAIT", "panamax.wait", "adaptive",
            "how a rank waits for its peers: adaptive (spin, yield, then sleep; spin 2 us at most, or not at all, "
                    + "while the CPUs are contended) or spin (never give up the CPU: only for ranks bound one per "
                    + "core, as Open MPI binds them)");

    // ---- observability and the cost model -------------------------------------------------------

    public static final Knob JMX = knob(null, "panamax.jmx", "true",
            "register a JMX bean per communicator (false: none)");
    public static final Knob REDUCE_BYTES_PER_SECOND = knob(null, "panamax.model.reduceBytesPerSecond", "1e10",
            "the reduction speed the planner's cost model assumes, in bytes per second");

    // ---- the shared-memory transport ------------------------------------------------------------

    public static final Knob SHM_WINDOW_BYTES = knob("PANAMAX_SHM_WINDOW_BYTES", "panamax.shm.windowBytes", "4096",
            "all-reduces of up to this many bytes between ranks that all share memory run one-shot: each rank writes "
                    + "its input into a window of shared memory and folds everyone's, one synchronisation per call "
                    + "(0 to 4096; 0: never); the ranks use the smallest of their values");

    // ---- the TCP transport ----------------------------------------------------------------------

    public static final Knob TCP_DATA_CONNECTIONS = knob("PANAMAX_TCP_DATA_CONNECTIONS",
            "panamax.tcp.dataConnections", "1",
            "one-way TCP connections per direction between each pair of ranks for messages of 128 KiB and more "
                    + "(0 to 8; 0: every message on the connection the pair's smaller messages share both ways); "
                    + "with several, messages of 512 KiB and more are split over them, one part of about 256 KiB or "
                    + "more per connection, for networks that limit each connection's rate; two ranks use the "
                    + "smaller of their values");

    // ---- the verbs transport --------------------------------------------------------------------

    public static final Knob VERBS_DEVICE = knob("PANAMAX_VERBS_DEVICE", "panamax.verbs.device", "the first device",
            "the RDMA device to open");
    public static final Knob VERBS_PORT = knob("PANAMAX_VERBS_PORT", "panamax.verbs.port", "1",
            "the port of the RDMA device");
    public static final Knob VERBS_GID_INDEX = knob("PANAMAX_VERBS_GID_INDEX", "panamax.verbs.gidIndex",
            "the port's first RoCE v2 GID, else 0", "the GID index to address peers with");
    public static final Knob VERBS_ZERO_COPY = knob("PANAMAX_VERBS_ZERO_COPY", "panamax.verbs.zeroCopy", "true",
            "register user buffers and write into them directly (false: copy through staging buffers)");
    public static final Knob VERBS_EAGER_BYTES = knob("PANAMAX_VERBS_EAGER_BYTES", "panamax.verbs.eagerBytes", "8192",
            "messages up to this many bytes (at most 65536) are written at once into the receiver's pre-registered "
                    + "eager slots instead of waiting for its advertisement (0: every message waits); two ranks use "
                    + "the smaller of their values");
    public static final Knob VERBS_INLINE_BYTES = knob("PANAMAX_VERBS_INLINE_BYTES", "panamax.verbs.inlineBytes",
            "256",
            "eager messages, advertisements and credit words up to this many bytes (at most 1024) are copied into the "
                    + "work request when posted (IBV_SEND_INLINE) instead of being read by the adapter from registered "
                    + "memory, and an eager send completes when posted; eager messages that fit inline with an 8-byte "
                    + "footer (248 bytes by default) carry one, which the receiver finds by reading memory instead of "
                    + "polling its completion queue; capped by what the device grants (0: never; a device that refuses "
                    + "the size gets none, with a warning)");

    private Settings() {
    }

    /** Every knob, in declaration order. */
    public static List<Knob> all() {
        return List.copyOf(ALL);
    }

    /**
     * The configuration reference as a Markdown table (knob, property, default, meaning), as
     * {@code docs/} quotes it.
     */
    public static String markdownTable() {
        StringBuilder b = new StringBuilder();
        b.append("| environment variable | system property | default | what it does |\n");
        b.append("|---|---|---|---|\n");
        for (Knob k : ALL) {
            String env = k.env() == null ? "" : "`" + k.env() + "`";
            if (!k.aliases().isEmpty()) {
                env += " (or " + String.join(", ", k.aliases().stream().map(a -> "`" + a + "`").toList()) + ")";
            }
            String prop = k.property() == null ? "" : "`" + k.property() + "`";
            String def = k.defaultValue() == null ? "required" : k.defaultValue();
            b.append("| ").append(env).append(" | ").append(prop).append(" | ").append(def).append(" | ")
                    .append(k.doc())
                    .append(" |\n");
        }
        return b.toString();
    }

    private static Knob knob(String env, String property, String defaultValue, String doc) {
        Knob k = new Knob(env, property, defaultValue, doc, List.of());
        ALL.add(k);
        return k;
    }

    /** A launch variable: the property is the lower-case dotted name ({@code panamax.rank}); aliases are read after it.
     * */
    private static Knob launch(String env, String defaultValue, String doc, String... aliases) {
        String property = env.toLowerCase(Locale.ROOT).replace('_', '.');
        Knob k = new Knob(env, property, defaultValue, doc, Arrays.asList(aliases));
        ALL.add(k);
        return k;
    }
}
