/**
 * LightGBM's distributed training over a Panamax communicator. LightGBM's native library (the
 * {@code lib_lightgbm.so} that the {@code lightgbmlib} jar bundles) is loaded from the class path and called
 * through hand-written FFM bindings ({@link dev.panamax.lightgbm.LightGbmC}); {@link dev.panamax.lightgbm.Dataset}
 * and {@link dev.panamax.lightgbm.Booster} own its handles. {@link dev.panamax.lightgbm.NetworkSession} joins the
 * calling thread to a distributed job: through LightGBM's own sockets, or through a
 * {@link dev.panamax.lightgbm.LightGbmNetwork} (for example {@link dev.panamax.lightgbm.CommunicatorNetwork})
 * that LightGBM calls back for its reduce-scatter and all-gather. {@link dev.panamax.lightgbm.PanamaxLightGbm}
 * trains in one call; {@link dev.panamax.lightgbm.ElasticLightGbm} does so surviving lost ranks.
 *
 * <p>LightGBM keeps its network state per thread: each rank trains on the thread that opened its session.
 */
package dev.panamax.lightgbm;
