/**
 * The gradient-synchronization benchmark of {@code scripts/bench/wfbp-bench}: {@link dev.panamax.bench.ml.WfbpBench}
 * measures WFBP, MG-WFBP and ASC-WFBP on the ranks of a job next to the simulator's prediction, on the
 * synthetic model profiles of {@link dev.panamax.bench.ml.SyntheticModels}.
 */
package dev.panamax.bench.ml;
