package dev.panamax.collectives;

import dev.panamax.collectives.internal.config.Settings;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * Where a process stands in a job: its rank, the world size, its local rank and the rendezvous
 * address. Read from system properties or the environment, first match wins:
 * {@code PANAMAX_RANK/PANAMAX_WORLD_SIZE/PANAMAX_LOCAL_RANK/PANAMAX_MASTER_ADDR/PANAMAX_MASTER_PORT};
 * torchrun's {@code RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT}; Open MPI's
 * {@code OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE/OMPI_COMM_WORLD_LOCAL_RANK}; Slurm's
 * {@code SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID}. System properties use the same names, or the
 * lower-case dotted form ({@code panamax.rank}).
 *
 * <p>Read elsewhere when the communicator connects: {@code PANAMAX_TRANSPORT} and
 * {@code PANAMAX_TIMEOUT_SECONDS} (see {@link CommunicatorBuilder}), and {@code PANAMAX_NODE}
 * (property {@code panamax.node}): when set and not blank, ranks with the same value use shared
 * memory to each other and ranks with different values TCP, instead of grouping by host name and
 * boot id (for emulating several nodes on one machine, see {@code docs/operations/emulation.md}); and
 * {@code PANAMAX_SECRET} (property {@code panamax.secret}), the job's secret that every rank proves
 * it holds when it connects (see {@link CommunicatorBuilder#secret}).
 *
 * <p>Rank 0's rendezvous store listens on {@link #masterAddr} only, as given: set it to the
 * address of the interface the other ranks reach (the default {@code 127.0.0.1} admits only
 * local processes); {@code 0.0.0.0} would listen on every interface and is logged as a warning.
 */
public record LaunchConfig(int rank, int worldSize, int localRank, String masterAddr, int masterPort) {
    /** The rendezvous port when none is configured. */
    public static final int DEFAULT_MASTER_PORT = Integer.parseInt(Settings.MASTER_PORT.defaultValue());

    public LaunchConfig {
        if (worldSize < 1) {
            throw new IllegalArgumentException("world size must be >= 1: " + worldSize);
        }
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank " + rank + " is outside [0, " + worldSize + ")");
        }
        if (masterPort < 0 || masterPort > 65535) {
            throw new IllegalArgumentException("master port out of range: " + masterPort);
        }
    }

    /** Reads the process's environment and system properties. */
    public static LaunchConfig fromEnvironment() {
        return from(System.getenv(), name -> {
            String v = System.getProperty(name);
            return v != null ? v : System.getProperty(name.toLowerCase(Locale.ROOT).replace('_', '.'));
        });
    }

    /** Reads {@code env}, with {@code properties} taking precedence (for tests). */
    public static LaunchConfig from(Map<String, String> env, Function<String, String> properties) {
        Function<String, Optional<String>> get = name -> {
            String v = properties.apply(name);
            if (v == null) {
                v = env.get(name);
            }
            return Optional.ofNullable(v).map(String::trim).filter(s -> !s.isEmpty());
        };
        String rankVar = first(get, Settings.RANK.envNames());
        String sizeVar = first(get, Settings.WORLD_SIZE.envNames());
        String localVar = first(get, Settings.LOCAL_RANK.envNames());
        if (rankVar == null || sizeVar == null) {
            throw new IllegalStateException("no rank or world size in the environment: set PANAMAX_RANK and "
                    + "PANAMAX_WORLD_SIZE "
                    + "(or torchrun's RANK/WORLD_SIZE, Open MPI's OMPI_COMM_WORLD_RANK/SIZE, Slurm's "
                    + "SLURM_PROCID/SLURM_NTASKS)");
        }
        int rank = parse(rankVar, get);
        int size = parse(sizeVar, get);
        int local = localVar == null ? rank : parse(localVar, get);
        String addrVar = first(get, Settings.MASTER_ADDR.envNames());
        String addr = addrVar == null ? Settings.MASTER_ADDR.defaultValue() : get.apply(addrVar).orElseThrow();
        String portVar = first(get, Settings.MASTER_PORT.envNames());
        int port = portVar == null ? DEFAULT_MASTER_PORT : parse(portVar, get);
        return new LaunchConfig(rank, size, local, addr, port);
    }

    private static String first(Function<String, Optional<String>> get, List<String> names) {
        for (String n : names) {
            if (get.apply(n).isPresent()) {
                return n;
            }
        }
        return null;
    }

    private static int parse(String name, Function<String, Optional<String>> get) {
        String v = get.apply(name).orElseThrow();
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " is not an integer: '" + v + "'");
        }
    }
}
