/**
 * Shared memory between processes of one host: an inbox per rank with a block per peer, small
 * messages inline, large ones by reference into the sender's shared buffers
 * ({@link dev.panamax.collectives.internal.transport.shm.ShmAllocator}).
 */
package dev.panamax.collectives.internal.transport.shm;
