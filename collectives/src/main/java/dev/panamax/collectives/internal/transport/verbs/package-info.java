/**
 * RDMA over libibverbs: a reliable connected queue pair per peer, set up over an authenticated TCP
 * connection, writing straight into registered buffers
 * ({@link dev.panamax.collectives.internal.transport.verbs.VerbsDomain}).
 */
package dev.panamax.collectives.internal.transport.verbs;
