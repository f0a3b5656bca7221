/**
 * The JMH benchmark of the reduction kernels ({@link dev.panamax.bench.kernels.ReductionBenchmark}) against a
 * plain Java loop; {@code scripts/bench/kernel-baseline} builds and runs the C baseline ({@code src/main/c}) that it
 * is compared with.
 */
package dev.panamax.bench.kernels;
