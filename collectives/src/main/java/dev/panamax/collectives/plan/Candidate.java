package dev.panamax.collectives.plan;

import dev.panamax.collectives.Topology;

/**
 * One option the planner weighed: an algorithm run on a topology (for hierarchical algorithms the
 * factorization it decomposes along), its predicted time and the formula that predicted it.
 */
public record Candidate(String algorithm, Topology topology, double predictedSeconds, String formula) {
}
