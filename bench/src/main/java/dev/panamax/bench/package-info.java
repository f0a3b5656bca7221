/**
 * The JMH suite of collective latency per transport and size ({@link dev.panamax.bench.CollectiveBenchmark}),
 * its helper rank processes, the shared-memory counters that keep those ranks in lockstep with the benchmark
 * thread ({@link dev.panamax.bench.LockstepCounters}), and {@link dev.panamax.bench.BandwidthReport}, which
 * turns a JMH result file into nccl-tests bandwidths. The subpackages hold the {@code panamax-perf} command
 * ({@code perf}), the reduction-kernel benchmark ({@code kernels}), the ranks of the reliability scripts
 * ({@code tools}), the CUDA and GPU all-reduce benchmarks ({@code cuda}, {@code gpu}), the WFBP benchmark
 * ({@code ml}) and the training example ({@code examples}).
 */
package dev.panamax.bench;
