package dev.panamax.collectives.schedule;

import java.util.List;

/**
 * A set of steps that run together: the local steps first, in order, then every transfer is
 * posted at once and the stage ends when all have completed. So a stage never computes on data
 * that is still in flight, and its transfers never wait on each other.
 */
public record Stage(String label, List<Step> steps) {
    public Stage {
        steps = List.copyOf(steps);
        boolean transfers = false;
        for (Step s : steps) {
            if (s.isTransfer()) {
                transfers = true;
            } else if (transfers) {
                throw new IllegalArgumentException("stage '" + label + "': local step '" + s + "' after a transfer; "
                        + "put it in the next stage");
            }
        }
    }

    /** The number of transfers in this stage. */
    public int transfers() {
        int n = 0;
        for (Step s : steps) {
            if (s.isTransfer()) {
                n++;
            }
        }
        return n;
    }
}
