package dev.panamax.collectives.algorithms;

/**
 * An algorithm's predicted time for a problem, in seconds, the formula that gave it (with the
 * equation numbers of the paper it comes from, see docs/reference/references.md), and the bytes
 * the busiest rank sends.
 */
public record Prediction(double seconds, String formula, double bytesPerRank) {
    /** Nothing to do: no time, no bytes. */
    public static Prediction zero(String why) {
        return new Prediction(0, why, 0);
    }
}
