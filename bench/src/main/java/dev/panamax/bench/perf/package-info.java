/**
 * {@code panamax-perf} ({@code scripts/panamax-perf}, entry point {@link dev.panamax.bench.perf.PerfMain}): an
 * nccl-tests style sweep of one collective over a range of sizes on threads, local processes or a launched
 * job, with result checking, the planner's schedules and choices, cost-model calibration, JSON output, charts
 * and flight recordings; on host memory or, with {@code -t gpu} and {@code -t nccl}, on device memory.
 */
package dev.panamax.bench.perf;
