package dev.panamax.collectives.internal.config;

import java.util.Locale;

/** How a rank waits for its peers ({@link Settings#WAIT}). */
public enum WaitRule {
    /** Spin, yield, then sleep (or park); spin 2 us at most, or not at all, while the CPUs are contended. */
    ADAPTIVE,
    /** Never give up the CPU: for ranks bound one per core. */
    SPIN;

    /** The rule {@link Settings#WAIT} names; throws naming the knob for anything but adaptive or spin. */
    public static WaitRule fromSettings() {
        String v = Settings.WAIT.value(Settings.WAIT.defaultValue()).toLowerCase(Locale.ROOT);
        return switch (v) {
            case "adaptive" -> ADAPTIVE;
            case "spin" -> SPIN;
            default -> throw new IllegalArgumentException(Settings.WAIT.name() + ": adaptive or spin, not '" + v + "'");
        };
    }
}
