/**
 * Helpers for the tests of the Panamax modules, used in test scope: {@link dev.panamax.testing.RankThreads}
 * runs a body on every rank of a group of threads; {@link dev.panamax.testing.Reference} gives the inputs and
 * expected results of collective reductions and checks them element by element;
 * {@link dev.panamax.testing.GpuTestSupport} and {@link dev.panamax.testing.RdmaTestSupport} hold the rule by
 * which a test that needs hardware skips or fails, and {@link dev.panamax.testing.GpuTest} and
 * {@link dev.panamax.testing.RdmaTest} tag such tests; {@link dev.panamax.testing.ChildJvm},
 * {@link dev.panamax.testing.RankProcesses} and {@link dev.panamax.testing.Ports} start child JVMs and jobs of
 * rank processes.
 *
 * <p>It depends on no Panamax module but memory, because the modules whose tests use it (verbs, cuda,
 * collectives, ml) must not be its dependencies: so it cannot ask CUDA or verbs whether they are there, and
 * takes the reason from the caller. Nor can memory's and bindings' own tests use it: memory keeps its scalar
 * reference of the reduction kernels (the float16 and bfloat16 conversions, written independently of
 * {@code Half}) in its tests, and bindings its child-JVM probe.
 */
package dev.panamax.testing;
