/**
 * Hand-written companions of the generated CUDA bindings: the {@code cuda.h} macros that are pointer or handle
 * casts ({@link dev.panamax.bindings.cuda.support.CudaMacros}), which jextract does not generate.
 */
package dev.panamax.bindings.cuda.support;
