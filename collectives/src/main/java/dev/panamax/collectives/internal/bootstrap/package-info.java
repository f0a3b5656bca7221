/**
 * How communicators come to be: {@link dev.panamax.collectives.internal.bootstrap.ProcessBootstrap}
 * (every rank meets the others at rank 0's rendezvous store, then the transports connect),
 * {@link dev.panamax.collectives.internal.bootstrap.InJvmBootstrap} (threads of one JVM), the store
 * itself and {@link dev.panamax.collectives.internal.bootstrap.HostIdentity}.
 */
package dev.panamax.collectives.internal.bootstrap;
