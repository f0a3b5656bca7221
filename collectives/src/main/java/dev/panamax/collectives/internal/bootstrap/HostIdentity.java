package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.Topology;
import dev.panamax.collectives.TransportKind;
import dev.panamax.collectives.internal.config.Settings;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Which processes share a host, and what that says about the job's hierarchy.
 *
 * <p>{@code PANAMAX_NODE} (system property {@code panamax.node}) overrides the host identity: when
 * it is set and not blank the identity is {@code node:<value>}, so ranks with the same value use
 * shared memory to each other and ranks with different values TCP, whatever host they run on. It
 * serves to emulate several nodes on one machine (for example one network namespace per rank,
 * see {@code docs/operations/emulation.md}); ranks given the same value must really share a host (same PID
 * namespace and {@code /dev/shm}), since shared memory is then used between them.
 */
public final class HostIdentity {
    private HostIdentity() {
    }

    /**
     * Which processes can share memory: {@code node:<PANAMAX_NODE>} when that is set (property
     * {@code panamax.node} first, then the environment) and not blank, else the host name plus the
     * kernel boot id.
     */
    public static String current() {
        return of(Settings.NODE.value());
    }

    static String of(String node) {
        if (node != null && !node.isBlank()) {
            return ("node:" + node.trim()).replace(' ', '_');
        }
        String name;
        try {
            name = InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            name = "localhost";
        }
        String boot = "";
        try {
            boot = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
        } catch (IOException ignored) {
            // not Linux: the name alone
        }
        return (name + "/" + boot).replace(' ', '_');
    }

    /** How many of {@code hosts} (one per rank) are {@code host}. */
    static int ranksOn(String[] hosts, String host) {
        int n = 0;
        for (String h : hosts) {
            if (h.equals(host)) {
                n++;
            }
        }
        return n;
    }

    /**
     * The hierarchy seen from the host identities: when there are several hosts and each runs the
     * same number k > 1 of ranks, two levels (k ranks per host, then the hosts) with the ranks of
     * each host grouped in rank order; otherwise one flat level. Levels within a host get the
     * shared-memory defaults (TCP's when TCP is forced), levels across hosts TCP's, until a
     * topology with measured values is set. Every rank computes the same.
     */
    static Topology detectTopology(String[] hosts, TransportKind kind) {
        int n = hosts.length;
        Topology.Level near = kind == TransportKind.TCP ? Topology.TCP : Topology.SHARED_MEMORY;
        Topology.Level far = Topology.TCP;
        Map<String, List<Integer>> byHost = new LinkedHashMap<>();
        for (int r = 0; r < n; r++) {
            byHost.computeIfAbsent(hosts[r], h -> new ArrayList<>()).add(r);
        }
        int k = byHost.values().iterator().next().size();
        boolean uniform = byHost.values().stream().allMatch(l -> l.size() == k);
        if (byHost.size() == 1) {
            return Topology.flat(n, near.bytesPerSecond(), near.latencySeconds());
        }
        if (k < 2 || !uniform) {
            return Topology.flat(n, far.bytesPerSecond(), far.latencySeconds());
        }
        int[] placement = new int[n];
        int pos = 0;
        for (List<Integer> l : byHost.values()) {
            for (int r : l) {
                placement[pos++] = r;
            }
        }
        Topology.Level inner = new Topology.Level(k, near.bytesPerSecond(), near.latencySeconds());
        Topology.Level outer = new Topology.Level(byHost.size(), far.bytesPerSecond(), far.latencySeconds());
        return new Topology(List.of(inner, outer), placement);
    }
}
