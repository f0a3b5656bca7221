/**
 * Buffers as {@link java.lang.foreign.MemorySegment}s and the element-wise arithmetic on them, the base every
 * other Panamax module builds on. The entry points: {@link dev.panamax.memory.HostMemory} (page-aligned host
 * buffers) and {@link dev.panamax.memory.SharedMemory} (segments mapped by several processes of one host);
 * {@link dev.panamax.memory.DataType} and {@link dev.panamax.memory.ReduceOp}, the element types and operators
 * of the collectives; {@link dev.panamax.memory.Reductions}, the reduction kernels (Vector API when available);
 * {@link dev.panamax.memory.Half}, the float16 and bfloat16 conversions.
 */
package dev.panamax.memory;
