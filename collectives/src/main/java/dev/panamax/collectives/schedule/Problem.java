package dev.panamax.collectives.schedule;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.Topology;

import java.util.Objects;

/**
 * What a schedule is built for: one rank's part of one collective. {@code count} is in elements
 * and means what the collective's call means by it: the vector length for all-reduce, broadcast
 * and reduce; {@code recvCount} for reduce-scatter; {@code sendCount} for all-gather; the
 * elements per peer for all-to-all; 0 for the barrier.
 */
public record Problem(Collective collective, int rank, int size, long count, int elementBytes, int root,
        Topology topology) {
    public Problem {
        Objects.requireNonNull(collective, "collective");
        Objects.requireNonNull(topology, "topology");
        if (size < 1 || rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank " + rank + " of " + size);
        }
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0: " + count);
        }
        if (elementBytes < 1) {
            throw new IllegalArgumentException("elementBytes must be >= 1: " + elementBytes);
        }
        if (root < 0 || root >= size) {
            throw new IllegalArgumentException("root " + root + " is not a rank of " + size);
        }
        if (topology.size() != size) {
            throw new IllegalArgumentException("topology " + topology + " has " + topology.size()
                    + " ranks, the communicator " + size);
        }
    }

    /** The same problem seen from another rank (for the simulator). */
    public Problem atRank(int r) {
        return new Problem(collective, r, size, count, elementBytes, root, topology);
    }

    /** The same problem on another topology of the same ranks (a factorization the planner chose, a flat one). */
    public Problem on(Topology t) {
        return new Problem(collective, rank, size, count, elementBytes, root, t);
    }

    /** The bytes of the vector the collective is about (per rank's send buffer for all-gather). */
    public long byteSize() {
        return count * elementBytes;
    }
}
