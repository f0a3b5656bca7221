/**
 * RDMA over libibverbs: devices, protection domains, memory regions, completion queues and reliable connected
 * queue pairs, with preallocated work requests for a post and poll path that does not allocate. The entry point
 * is {@link dev.panamax.verbs.Verbs} (is libibverbs there, which devices, open one as a
 * {@link dev.panamax.verbs.VerbsContext}); from a context come {@link dev.panamax.verbs.ProtectionDomain}s,
 * {@link dev.panamax.verbs.CompletionQueue}s and, through a domain, {@link dev.panamax.verbs.MemoryRegion}s,
 * a {@link dev.panamax.verbs.RegistrationCache} and {@link dev.panamax.verbs.QueuePair}s.
 */
package dev.panamax.verbs;
