/**
 * Data-parallel training of DJL models over a Panamax communicator:
 * {@link dev.panamax.djl.DataParallelTraining} is a training listener that starts every rank from rank 0's
 * parameters and averages the gradients over the ranks before each optimizer step, in place on the tensors'
 * own memory where the engine exposes it (CPU tensors of the PyTorch engine).
 */
package dev.panamax.djl;
