/**
 * The hand-written base of the bindings: {@link dev.panamax.bindings.NativeLibrary} loads libibverbs, libcuda
 * and libnccl lazily (so the generated classes work on a machine without them) and says why one is missing;
 * {@link dev.panamax.bindings.Errno} captures errno per call. The generated bindings are in the sub-packages
 * {@code verbs}, {@code cuda} and {@code nccl}, their hand-written companions in the {@code support} package
 * under each.
 */
package dev.panamax.bindings;
