/**
 * Observability: the JFR events {@code dev.panamax.Collective} and {@code dev.panamax.Step}
 * (costing one enabled check when no recording wants them) and the per-communicator JMX bean.
 */
package dev.panamax.collectives.internal.observe;
