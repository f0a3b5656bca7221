package dev.panamax.lightgbm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The reducer LightGBM passes to its reduce-scatter hook, callable from Java.
 *
 * <p>The ABI, checked against the library that lightgbmlib 3.3.500 bundles: LightGBM 3.3's {@code meta.h}
 * declares {@code typedef void(*ReduceFunction)(const char* input, char* output, int type_size, comm_size_t
 * array_size);} with {@code comm_size_t} = {@code int32_t}, a plain C function pointer, not a
 * {@code std::function} (the exported symbol {@code LightGBM::Network::ReduceScatter(char*, int, int, int
 * const*, int const*, char*, int, void (* const&)(char const*, char*, int, int))} says the same). The hook
 * receives it as {@code const ReduceFunction& reducer}, which the x86-64 System V ABI passes as the address of a
 * cell holding the function pointer. So: read one pointer at that address, and call it with the four arguments
 * by value. The cell is LightGBM's (often a temporary made for the call), so a reducer is valid only during
 * the upcall that received it; {@link #close} marks that end.
 */
final class NativeReducer implements LightGbmReducer, AutoCloseable {
    /** {@code void (*)(const char* input, char* output, int type_size, comm_size_t array_size)}, target first. */
    private static final MethodHandle INVOKE = Linker.nativeLinker().downcallHandle(
            FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_INT, JAVA_INT));

    private final MemorySegment function;
    private volatile boolean valid = true;

    /** The reducer whose {@code const ReduceFunction&} LightGBM passed: {@code reference} points at the pointer. */
    NativeReducer(MemorySegment reference) {
        if (reference.equals(MemorySegment.NULL)) {
            throw new IllegalArgumentException("LightGBM passed no reducer");
        }
        this.function = reference.reinterpret(ADDRESS.byteSize()).get(ADDRESS, 0);
        if (function.equals(MemorySegment.NULL)) {
            throw new IllegalArgumentException("LightGBM's reducer is a null function pointer");
        }
    }

    /** The address of the native reduce function. */
    MemorySegment function() {
        return function;
    }

    /** Calls LightGBM's reducer: {@code inout op= in} over {@code byteCount} bytes. Both must be native memory. */
    @Override
    public void reduce(MemorySegment in, MemorySegment inout, int typeSize, int byteCount) {
        if (!valid) {
            throw new IllegalStateException("LightGBM's reducer was used after the reduce-scatter call returned");
        }
        if (typeSize <= 0 || byteCount < 0 || byteCount % typeSize != 0) {
            throw new IllegalArgumentException(byteCount + " bytes are not a whole number of " + typeSize
                    + "-byte items");
        }
        if (in.byteSize() < byteCount || inout.byteSize() < byteCount) {
            throw new IndexOutOfBoundsException("reducing " + byteCount + " bytes of segments of " + in.byteSize()
                    + " and " + inout.byteSize() + " bytes");
        }
        if (!in.isNative() || !inout.isNative()) {
            throw new IllegalArgumentException("LightGBM's reducer needs native memory");
        }
        try {
            INVOKE.invokeExact(function, in, inout, typeSize, byteCount);
        } catch (Throwable t) {
            throw new IllegalStateException("calling LightGBM's reducer failed: " + t, t);
        }
    }

    /** Ends the reducer's validity (the upcall that received it returns). */
    @Override
    public void close() {
        valid = false;
    }
}
