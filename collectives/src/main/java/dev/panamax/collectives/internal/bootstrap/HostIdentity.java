package dev.panamax.collectives.internal.bootstrap;

import dev.panamax.collectives.Topology;
import dev.panamax.collectives.TransportKind;
import dev.panamax.collectives.internal.config.Settings;
import dev.panamax.memory.internal.Libc;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
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

    /**
     * How many CPUs the ranks of this host, processes {@code localPids} (this one among them), may run on together: the
     * union of their affinity masks. Ranks bound one to a core ({@code taskset}, a launcher's binding) thus count one
     * CPU each, not one in all, which is what each one's {@link Runtime#availableProcessors()} says, and would make
     * ranks on separate cores look oversubscribed (waits that never spin, yielding their core to any other process
     * on it). At most this process's {@code availableProcessors()} where that is below its own mask: a CPU quota,
     * which the host's ranks share. That same count where a mask cannot be read.
     */
    static int usableCpus(long[] localPids) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment own = arena.allocate(Libc.CPU_SET_BYTES, 8);
            return usableCpus(localPids, Runtime.getRuntime().availableProcessors(),
                    Libc.affinity(ProcessHandle.current().pid(), own));
        }
    }

    /**
     * {@link #usableCpus(long[])} given this process's {@code availableProcessors} and the CPUs of its own mask
     * ({@code ownMaskCpus}, -1 unknown).
     */
    static int usableCpus(long[] pids, int availableProcessors, int ownMaskCpus) {
        if (ownMaskCpus <= 0 || pids.length == 0) {
            return availableProcessors;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment union = arena.allocate(Libc.CPU_SET_BYTES, 8);
            MemorySegment mask = arena.allocate(Libc.CPU_SET_BYTES, 8);
            for (long pid : pids) {
                if (Libc.affinity(pid, mask) <= 0) {
                    return availableProcessors;
                }
                for (long i = 0; i < Libc.CPU_SET_BYTES; i += 8) {
                    union.set(ValueLayout.JAVA_LONG_UNALIGNED, i, union.get(ValueLayout.JAVA_LONG_UNALIGNED, i)
                            | mask.get(ValueLayout.JAVA_LONG_UNALIGNED, i));
                }
            }
            int cpus = Libc.cpuCount(union);
            return availableProcessors < ownMaskCpus ? Math.min(cpus, availableProcessors) : cpus;
        }
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
