/**
 * Not API: what the other Panamax modules share below their own API, exported only to them. The few libc
 * calls Panamax makes itself ({@link dev.panamax.memory.internal.Libc}) and their
 * {@link dev.panamax.memory.internal.NativeCallException}, and {@link dev.panamax.memory.internal.Closer},
 * which runs every close action of a sequence and rethrows the first failure. It uses nothing of
 * {@code dev.panamax.memory}.
 */
package dev.panamax.memory.internal;
