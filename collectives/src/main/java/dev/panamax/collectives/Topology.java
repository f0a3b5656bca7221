package dev.panamax.collectives;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The network hierarchy of a job as a box of levels, innermost first: level 0 is the ranks of one
 * node (fan-out p0), level 1 the nodes under one switch (p1), and so on, so that the ranks number
 * p0 * p1 * ... * pk ([BlueConnect] eq. 8). Each level has the bandwidth w_i one stream gets on it
 * and a latency alpha_i, used by the cost models.
 *
 * <p>Ranks are placed in the box by a placement: position {@code sum c_i * (p0 * ... * p_{i-1})}
 * holds rank {@code placement[position]}. The default placement is the identity, i.e. consecutive
 * ranks fill a node first (like {@code mpirun --map-by core}).
 *
 * <p>Spec syntax ({@link #parse}): {@code 3x2x2}, optionally with per-level bandwidths in bytes
 * per second and latencies: {@code 2x2:bw=5G,100M:alpha=2us,50us}. A file ({@link #load}) gives
 * the levels and, like Open MPI's rank file, where each rank runs.
 */
public final class Topology {
    /** One level of the hierarchy. */
    public record Level(int fanout, double bytesPerSecond, double latencySeconds) {
        public Level {
            if (fanout < 1) {
                throw new IllegalArgumentException("level fan-out must be >= 1: " + fanout);
            }
            if (!(bytesPerSecond > 0) || !(latencySeconds >= 0)) {
                throw new IllegalArgumentException("level bandwidth must be > 0 and latency >= 0: " + bytesPerSecond
                        + ", " + latencySeconds);
            }
        }
    }

    /** Bandwidth assumed for a level whose bandwidth is not given: 1 GB/s. */
    public static final double DEFAULT_BYTES_PER_SECOND = 1e9;
    /** Latency assumed for a level whose latency is not given: 5 us. */
    public static final double DEFAULT_LATENCY_SECONDS = 5e-6;

    private final List<Level> levels;
    private final int size;
    private final int[] placement;
    private final int[] position;

    /** A topology with the given levels (innermost first) and placement ({@code null}: identity). */
    public Topology(List<Level> levels, int[] placement) {
        if (levels.isEmpty()) {
            throw new IllegalArgumentException("a topology needs at least one level");
        }
        this.levels = List.copyOf(levels);
        long n = 1;
        for (Level l : levels) {
            n *= l.fanout();
            if (n > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("topology too large: " + levels);
            }
        }
        this.size = (int) n;
        if (placement == null) {
            placement = new int[size];
            for (int i = 0; i < size; i++) {
                placement[i] = i;
            }
        }
        if (placement.length != size) {
            throw new IllegalArgumentException("placement has " + placement.length + " entries, the topology " + size
                    + " ranks");
        }
        this.placement = placement.clone();
        this.position = new int[size];
        Arrays.fill(position, -1);
        for (int pos = 0; pos < size; pos++) {
            int r = this.placement[pos];
            if (r < 0 || r >= size || position[r] != -1) {
                throw new IllegalArgumentException("placement is not a permutation of 0.." + (size - 1) + ": "
                        + Arrays.toString(placement));
            }
            position[r] = pos;
        }
    }

    /** One level of {@code size} ranks with default bandwidth and latency. */
    public static Topology flat(int size) {
        return flat(size, DEFAULT_BYTES_PER_SECOND, DEFAULT_LATENCY_SECONDS);
    }

    /** One level of {@code size} ranks with the given bandwidth and latency. */
    public static Topology flat(int size, double bytesPerSecond, double latencySeconds) {
        return new Topology(List.of(new Level(size, bytesPerSecond, latencySeconds)), null);
    }

    /**
     * What a level over shared memory is assumed to give until measured ({@code panamax-perf
     * --calibrate}): 10 GB/s and 1 us per hand-off.
     */
    public static final Level SHARED_MEMORY = new Level(1, 10e9, 1e-6);
    /** What a level over TCP is assumed to give until measured: 1 GB/s and 20 us per message. */
    public static final Level TCP = new Level(1, 1e9, 20e-6);

    /** Levels of the given fan-outs (innermost first), default bandwidths and latencies, identity placement. */
    public static Topology of(int... fanouts) {
        List<Level> l = new ArrayList<>();
        for (int f : fanouts) {
            l.add(new Level(f, DEFAULT_BYTES_PER_SECOND, DEFAULT_LATENCY_SECONDS));
        }
        return new Topology(l, null);
    }

    /**
     * Parses {@code p0xp1x...[:bw=B0,B1,...][:alpha=A0,A1,...]}; bandwidths in bytes per second
     * with an optional K, M, G suffix (powers of 1000) and optional {@code B/s}; latencies in
     * seconds with an optional ns, us, ms or s suffix.
     */
    public static Topology parse(String spec) {
        Objects.requireNonNull(spec, "spec");
        String[] parts = spec.trim().split(":");
        String[] dims = parts[0].trim().toLowerCase(Locale.ROOT).split("x");
        int[] f = new int[dims.length];
        for (int i = 0; i < dims.length; i++) {
            try {
                f[i] = Integer.parseInt(dims[i].trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("topology '" + spec + "': fan-out '" + dims[i]
                        + "' is not an integer");
            }
            if (f[i] < 1) {
                throw new IllegalArgumentException("topology '" + spec + "': fan-out " + f[i] + " must be >= 1");
            }
        }
        double[] bw = new double[f.length];
        double[] lat = new double[f.length];
        Arrays.fill(bw, DEFAULT_BYTES_PER_SECOND);
        Arrays.fill(lat, DEFAULT_LATENCY_SECONDS);
        for (int i = 1; i < parts.length; i++) {
            String p = parts[i].trim();
            int eq = p.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException("topology '" + spec + "': expected bw=... or alpha=..., got '" + p
                        + "'");
            }
            String key = p.substring(0, eq).trim().toLowerCase(Locale.ROOT);
            String[] vals = p.substring(eq + 1).split(",");
            if (vals.length != f.length) {
                throw new IllegalArgumentException("topology '" + spec + "': " + key + " has " + vals.length
                        + " values for " + f.length + " levels");
            }
            for (int j = 0; j < vals.length; j++) {
                switch (key) {
                    case "bw", "bandwidth" -> bw[j] = parseBandwidth(vals[j], spec);
                    case "alpha", "latency" -> lat[j] = parseSeconds(vals[j], spec);
                    default -> throw new IllegalArgumentException("topology '" + spec + "': unknown key '" + key
                            + "' (bw, alpha)");
                }
            }
        }
        List<Level> levels = new ArrayList<>();
        for (int i = 0; i < f.length; i++) {
            levels.add(new Level(f[i], bw[i], lat[i]));
        }
        return new Topology(levels, null);
    }

    /**
     * Reads a topology file: one {@code level FANOUT [bw=B] [alpha=A]} line per level, innermost
     * first, then optionally one line per rank in Open MPI's rank-file syntax,
     * {@code rank R=HOST slot=S}. The ranks of a host fill one innermost group, slots in order,
     * and hosts follow each other in the order they first appear, so that consecutive hosts share
     * the next level. Without rank lines the placement is the identity. {@code #} starts a comment.
     *
     * <pre>
     * level 3 bw=20G alpha=1us    # GPUs of a node
     * level 2 bw=10G alpha=5us    # nodes under a rack switch
     * level 2 bw=5G  alpha=10us   # racks
     * rank 0=hostA slot=0
     * rank 1=hostA slot=1
     * ...
     * </pre>
     */
    public static Topology load(Path file) throws IOException {
        List<Level> levels = new ArrayList<>();
        Map<String, TreeMap<Integer, Integer>> hosts = new LinkedHashMap<>();
        int lineNo = 0;
        for (String raw : Files.readAllLines(file)) {
            lineNo++;
            String line = raw.replaceFirst("#.*", "").trim();
            if (line.isEmpty()) {
                continue;
            }
            String where = file + ":" + lineNo + ": ";
            String[] f = line.split("\\s+");
            switch (f[0]) {
                case "level" -> {
                    if (f.length < 2) {
                        throw new IllegalArgumentException(where + "expected 'level FANOUT [bw=B] [alpha=A]'");
                    }
                    int fanout;
                    try {
                        fanout = Integer.parseInt(f[1]);
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException(where + "fan-out '" + f[1] + "' is not an integer");
                    }
                    double bw = DEFAULT_BYTES_PER_SECOND;
                    double lat = DEFAULT_LATENCY_SECONDS;
                    for (int i = 2; i < f.length; i++) {
                        if (f[i].startsWith("bw=")) {
                            bw = parseBandwidth(f[i].substring(3), where.trim());
                        } else if (f[i].startsWith("alpha=")) {
                            lat = parseSeconds(f[i].substring(6), where.trim());
                        } else {
                            throw new IllegalArgumentException(where + "unknown level attribute '" + f[i]
                                    + "' (bw=, alpha=)");
                        }
                    }
                    levels.add(new Level(fanout, bw, lat));
                }
                case "rank" -> {
                    Matcher m = Pattern.compile("rank\\s+(\\d+)\\s*=\\s*(\\S+)\\s+slot\\s*=\\s*(\\d+)")
                            .matcher(line);
                    if (!m.matches()) {
                        throw new IllegalArgumentException(where + "expected 'rank R=HOST slot=S'");
                    }
                    int r = Integer.parseInt(m.group(1));
                    int slot = Integer.parseInt(m.group(3));
                    Integer old = hosts.computeIfAbsent(m.group(2), h -> new TreeMap<>()).put(slot, r);
                    if (old != null) {
                        throw new IllegalArgumentException(where + "slot " + slot + " of " + m.group(2)
                                + " holds ranks " + old + " and " + r);
                    }
                }
                default -> throw new IllegalArgumentException(where + "expected a 'level' or 'rank' line, got '" + f[0]
                        + "'");
            }
        }
        if (levels.isEmpty()) {
            throw new IllegalArgumentException(file + ": no 'level' lines");
        }
        if (hosts.isEmpty()) {
            return new Topology(levels, null);
        }
        int perHost = levels.get(0).fanout();
        List<Integer> placement = new ArrayList<>();
        for (var e : hosts.entrySet()) {
            if (e.getValue().size() != perHost) {
                throw new IllegalArgumentException(file + ": host " + e.getKey() + " runs " + e.getValue().size()
                        + " ranks but the innermost level has fan-out " + perHost
                        + " (an asymmetric placement has no box; "
                        + "hierarchical algorithms need every host to run the same number of ranks)");
            }
            placement.addAll(e.getValue().values());
        }
        int[] p = placement.stream().mapToInt(Integer::intValue).toArray();
        return new Topology(levels, p);
    }

    static double parseBandwidth(String v, String spec) {
        String s = v.trim().replace("B/s", "").replace("b/s", "").replace("/s", "");
        if (s.endsWith("B")) {
            s = s.substring(0, s.length() - 1);
        }
        double mult = 1;
        char last = s.isEmpty() ? ' ' : Character.toUpperCase(s.charAt(s.length() - 1));
        switch (last) {
            case 'K' -> mult = 1e3;
            case 'M' -> mult = 1e6;
            case 'G' -> mult = 1e9;
            case 'T' -> mult = 1e12;
            default -> mult = 0;
        }
        if (mult != 0) {
            s = s.substring(0, s.length() - 1);
        } else {
            mult = 1;
        }
        try {
            double d = Double.parseDouble(s.trim()) * mult;
            if (!(d > 0)) {
                throw new NumberFormatException();
            }
            return d;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("topology '" + spec + "': bandwidth '" + v
                    + "' is not a positive number of bytes/s");
        }
    }

    static double parseSeconds(String v, String spec) {
        String s = v.trim().toLowerCase(Locale.ROOT);
        double mult = 1;
        if (s.endsWith("ns")) {
            mult = 1e-9;
            s = s.substring(0, s.length() - 2);
        } else if (s.endsWith("us")) {
            mult = 1e-6;
            s = s.substring(0, s.length() - 2);
        } else if (s.endsWith("ms")) {
            mult = 1e-3;
            s = s.substring(0, s.length() - 2);
        } else if (s.endsWith("s")) {
            s = s.substring(0, s.length() - 1);
        }
        try {
            double d = Double.parseDouble(s.trim()) * mult;
            if (!(d >= 0)) {
                throw new NumberFormatException();
            }
            return d;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("topology '" + spec + "': latency '" + v
                    + "' is not a non-negative time");
        }
    }

    /** The number of ranks, p0 * p1 * ... */
    public int size() {
        return size;
    }

    /** The number of levels. */
    public int levels() {
        return levels.size();
    }

    public Level level(int i) {
        return levels.get(i);
    }

    public List<Level> levelList() {
        return levels;
    }

    public int fanout(int level) {
        return levels.get(level).fanout();
    }

    /** The fan-outs, innermost first. */
    public int[] fanouts() {
        int[] f = new int[levels.size()];
        for (int i = 0; i < f.length; i++) {
            f[i] = levels.get(i).fanout();
        }
        return f;
    }

    /** The rank at box position {@code pos}. */
    public int rankAt(int pos) {
        return placement[pos];
    }

    /** {@code rank}'s coordinate along {@code level}. */
    public int coordinate(int rank, int level) {
        checkRank(rank);
        int pos = position[rank];
        for (int i = 0; i < level; i++) {
            pos /= levels.get(i).fanout();
        }
        return pos % levels.get(level).fanout();
    }

    /**
     * The ranks that share every coordinate with {@code rank} except the one along {@code level},
     * ordered by that coordinate: c(r, w_i) of [BlueConnect] Algorithm 1, line 3.
     */
    public int[] group(int rank, int level) {
        checkRank(rank);
        int stride = 1;
        for (int i = 0; i < level; i++) {
            stride *= levels.get(i).fanout();
        }
        int p = levels.get(level).fanout();
        int pos = position[rank];
        int base = pos - ((pos / stride) % p) * stride;
        int[] g = new int[p];
        for (int c = 0; c < p; c++) {
            g[c] = placement[base + c * stride];
        }
        return g;
    }

    private void checkRank(int rank) {
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank " + rank + " is not in this topology of " + size + " ranks");
        }
    }

    /** The spec form, {@code 2x2:bw=5e+09,1e+08:alpha=2e-06,5e-05} (plus the placement when not the identity). */
    @Override
    public String toString() {
        StringBuilder b = new StringBuilder();
        StringBuilder bw = new StringBuilder(":bw=");
        StringBuilder al = new StringBuilder(":alpha=");
        for (int i = 0; i < levels.size(); i++) {
            Level l = levels.get(i);
            if (i > 0) {
                b.append('x');
                bw.append(',');
                al.append(',');
            }
            b.append(l.fanout());
            bw.append(String.format(Locale.ROOT, "%.3g", l.bytesPerSecond()));
            al.append(String.format(Locale.ROOT, "%.3g", l.latencySeconds()));
        }
        b.append(bw).append(al);
        boolean identity = true;
        for (int i = 0; i < size; i++) {
            identity &= placement[i] == i;
        }
        if (!identity) {
            b.append(" placement=").append(Arrays.toString(placement));
        }
        return b.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Topology t && t.levels.equals(levels) && Arrays.equals(t.placement, placement);
    }

    @Override
    public int hashCode() {
        return levels.hashCode() * 31 + Arrays.hashCode(placement);
    }
}
