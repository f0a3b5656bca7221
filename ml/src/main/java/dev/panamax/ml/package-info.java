/**
 * Gradient all-reduces overlapped with back-propagation (WFBP, MG-WFBP, ASC-WFBP). The entry point is
 * {@link dev.panamax.ml.GradientSynchronizer#builder}, with a {@link dev.panamax.ml.SyncPolicy}; the cost model
 * it decides with is {@link dev.panamax.ml.AllReduceModel} (calibrated on a communicator), the layer types come
 * from {@link dev.panamax.ml.LayerTypes}, and {@link dev.panamax.ml.WfbpSimulator} predicts an iteration's
 * timeline from a {@link dev.panamax.ml.BackwardProfile}. The task-based shared variables are in
 * {@link dev.panamax.ml.shared}. [ASC-WFBP] in comments is the paper these come from (docs/reference/references.md).
 */
package dev.panamax.ml;
