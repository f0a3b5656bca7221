/**
 * The implementation, not exported. Its packages form layers whose imports point down only
 * (checked by {@code DependencyRulesTest}):
 * <ol>
 *   <li>{@code config} (every knob) and {@code auth} (the job secret's handshake);</li>
 *   <li>{@code transport} (the {@code Link}/{@code Request} contract, {@code Transport} and its
 *       selector), {@code observe} (JFR events, the JMX bean) and {@code elastic} (the agreement's
 *       rule and the {@code Membership} that agree and shrink go through);</li>
 *   <li>one folder per transport: {@code transport.local}, {@code .shm}, {@code .tcp},
 *       {@code .verbs};</li>
 *   <li>{@code runtime}: the communicator implementation, its checks, plan cache, executor and
 *       progress loop;</li>
 *   <li>{@code bootstrap} (rendezvous store, process and in-JVM bootstrap) and {@code device} (the
 *       GPU backends).</li>
 * </ol>
 * Any internal package may use the API packages; the API reaches them only through its factories.
 */
package dev.panamax.collectives.internal;
