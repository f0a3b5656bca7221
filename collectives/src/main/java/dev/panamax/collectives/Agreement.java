package dev.panamax.collectives;

import java.util.List;

/**
 * What {@link Communicator#agree} returns, the same on every rank that returns: the bitwise AND of
 * the flags of the ranks that took part, and the ranks that did not (they died, closed their
 * communicator, or did not call within the timeout), ascending, in the communicator's numbering.
 *
 * @param flags       the AND of the surviving ranks' flags
 * @param failedRanks the ranks counted as failed, ascending
 */
public record Agreement(long flags, List<Integer> failedRanks) {
    public Agreement {
        failedRanks = List.copyOf(failedRanks);
    }

    /** Whether no rank failed. */
    public boolean unanimous() {
        return failedRanks.isEmpty();
    }
}
