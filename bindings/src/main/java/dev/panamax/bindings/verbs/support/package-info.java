/**
 * Hand-written companions of the generated libibverbs bindings: the static inline functions of
 * {@code verbs.h} ({@link dev.panamax.bindings.verbs.support.VerbsInline}), the calls that report failure
 * through errno, with errno captured per call ({@link dev.panamax.bindings.verbs.support.VerbsErrno}), and
 * GID table entries with their type ({@link dev.panamax.bindings.verbs.support.VerbsGid}).
 */
package dev.panamax.bindings.verbs.support;
