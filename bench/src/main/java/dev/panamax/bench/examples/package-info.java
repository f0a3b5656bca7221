/**
 * Example programs built on the library: {@link dev.panamax.bench.examples.MlpExample}, data-parallel training
 * of a small perceptron with a gradient synchronizer ({@code scripts/train-example}), checked against the same
 * training in one process; {@link dev.panamax.bench.examples.LightGbmExample}, LightGBM's data-parallel training
 * with Panamax as its network ({@code scripts/lightgbm-example}).
 */
package dev.panamax.bench.examples;
