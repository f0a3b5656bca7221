/**
 * Hand-written companions of the generated NCCL bindings: {@code NCCL_CONFIG_INITIALIZER} and
 * {@code NCCL_VERSION} ({@link dev.panamax.bindings.nccl.support.NcclConfig}), which jextract cannot turn into
 * Java.
 */
package dev.panamax.bindings.nccl.support;
