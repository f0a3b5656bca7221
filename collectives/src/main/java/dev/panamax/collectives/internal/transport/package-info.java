/**
 * The transport contract: {@link dev.panamax.collectives.internal.transport.Link} (an ordered,
 * reliable message channel to one peer, FIFO-matched, progressed by the waiting thread, closable
 * from any thread) and {@link dev.panamax.collectives.internal.transport.Request}; where buffers
 * come from ({@link dev.panamax.collectives.internal.transport.BufferAllocator}); and how a process
 * connects: {@link dev.panamax.collectives.internal.transport.Transport}s tried in order by the
 * {@link dev.panamax.collectives.internal.transport.TransportSelector}, over a
 * {@link dev.panamax.collectives.internal.transport.Rendezvous}. The TCP groundwork shared by the
 * TCP and verbs transports ({@code SocketMesh}, {@code BlameHeader}) lives here too. One folder per
 * transport below this package; none imports another.
 */
package dev.panamax.collectives.internal.transport;
