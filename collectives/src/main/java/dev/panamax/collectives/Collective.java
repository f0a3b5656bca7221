package dev.panamax.collectives;

import java.util.Locale;

/** The collective operations, as named by {@code panamax-perf} and by algorithm selection. */
public enum Collective {
    ALL_REDUCE("allreduce"),
    REDUCE_SCATTER("reducescatter"),
    ALL_GATHER("allgather"),
    BROADCAST("broadcast"),
    REDUCE("reduce"),
    ALL_TO_ALL("alltoall"),
    BARRIER("barrier");

    private final String label;

    Collective(String label) {
        this.label = label;
    }

    /** The lower-case name: {@code allreduce}, {@code reducescatter}, ... */
    public String label() {
        return label;
    }

    /** Parses a {@link #label()} (or the enum name); the error lists the known names. */
    public static Collective parse(String s) {
        String k = s.trim().toLowerCase(Locale.ROOT).replace("_", "").replace("-", "");
        for (Collective c : values()) {
            if (c.label.equals(k)) {
                return c;
            }
        }
        throw new IllegalArgumentException("unknown collective '" + s
                + "'; known: allreduce, reducescatter, allgather, "
                + "broadcast, reduce, alltoall, barrier");
    }
}
