/**
 * Task-based all-reduces: a {@link dev.panamax.ml.shared.SharedVariable} is a vector to which several tasks of
 * each process commit, reduced element-wise over all tasks of all processes with a
 * {@link dev.panamax.ml.shared.SharedReduction}. The entry points are {@link dev.panamax.ml.shared.SharedVariable#init}
 * and {@link dev.panamax.ml.shared.SharedVariable#lookup}. The package-private classes hold the state of a
 * variable and of its rounds, the per-communicator coordinator that orders the global all-reduces, and the
 * chunked element-wise kernels.
 */
package dev.panamax.ml.shared;
