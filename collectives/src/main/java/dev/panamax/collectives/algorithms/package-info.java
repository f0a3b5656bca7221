/**
 * Collective algorithms, one class each ({@link dev.panamax.collectives.algorithms.Ring},
 * {@link dev.panamax.collectives.algorithms.HalvingDoubling},
 * {@link dev.panamax.collectives.algorithms.BlueConnect}, ...), each building the schedule one rank
 * runs and predicting its own time; the registry by name
 * ({@link dev.panamax.collectives.algorithms.Algorithms}), which the planner asks; and the cost
 * building blocks shared by the predictions ({@link dev.panamax.collectives.algorithms.Costs},
 * {@link dev.panamax.collectives.algorithms.Network}). A new algorithm is one class implementing
 * {@link dev.panamax.collectives.algorithms.Algorithm}, registered at run time.
 */
package dev.panamax.collectives.algorithms;
