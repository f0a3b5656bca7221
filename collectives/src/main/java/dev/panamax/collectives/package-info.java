/**
 * The collectives API: {@link dev.panamax.collectives.Communicator} (all-reduce, reduce-scatter,
 * all-gather, broadcast, reduce, all-to-all, barrier, send/recv, split), made by
 * {@link dev.panamax.collectives.Panamax} (from the environment, a builder, or threads of one JVM),
 * with its {@link dev.panamax.collectives.Topology}, {@link dev.panamax.collectives.LaunchConfig}
 * and the failures it reports ({@link dev.panamax.collectives.PeerFailedException},
 * {@link dev.panamax.collectives.CollectiveTimeoutException},
 * {@link dev.panamax.collectives.MismatchedCallException}).
 *
 * <p>The API reaches the implementation in {@code internal} only through its factories:
 * {@code Panamax} and {@code CommunicatorBuilder.connect} call the bootstrap
 * ({@code internal.bootstrap}), {@code gpu.GpuCommunicator.create} and
 * {@code gpu.GpuBlueConnect.create} the device backends ({@code internal.device}); the builder,
 * {@code LaunchConfig} and the planner's cost model read their knobs from
 * {@code internal.config.Settings}. Those are the only edges from exported packages into
 * internal ones, and the only package cycles (checked by {@code DependencyRulesTest}; see
 * docs/design/architecture.md).
 *
 * <p>Comments cite the papers the algorithms and cost models come from by tag ([BlueConnect],
 * [PowerAI-DDL], [TaskAllReduce], [RingAllReduce], [ASC-WFBP]), defined in
 * docs/reference/references.md.
 */
package dev.panamax.collectives;
