/** TCP to any peer: one authenticated non-blocking socket per peer, length-prefixed messages. */
package dev.panamax.collectives.internal.transport.tcp;
