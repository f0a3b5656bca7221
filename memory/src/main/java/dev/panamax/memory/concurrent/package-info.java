/**
 * What a thread does while it polls for work that has not come: the {@link
 * dev.panamax.memory.concurrent.IdleStrategy} of a polling loop (as in Agrona), made by the factories of
 * {@link dev.panamax.memory.concurrent.IdleStrategies}. Busy spinning, a backoff counted in idles for completion
 * queues, and a backoff timed since the wait went idle for flags that another process sets.
 */
package dev.panamax.memory.concurrent;
