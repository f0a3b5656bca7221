/**
 * Panamax collectives inside Apache Spark barrier stages: the entry point {@link dev.panamax.spark.PanamaxBarrier}
 * connects the tasks of a stage into a communicator without configuration, all-reduces arrays, and gives the
 * tasks of an executor process a shared variable ({@link dev.panamax.ml.shared.SharedVariable}) over one
 * communicator per process. A class-path library: Spark is not modular.
 */
package dev.panamax.spark;
