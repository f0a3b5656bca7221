/**
 * The job secret's mutual HMAC-SHA256 challenge-response
 * ({@link dev.panamax.collectives.internal.auth.MutualAuth}), run at the start of every connection
 * to the rendezvous store and of every rank-to-rank TCP connection. Lowest layer: both the
 * bootstrap and the transports use it.
 */
package dev.panamax.collectives.internal.auth;
