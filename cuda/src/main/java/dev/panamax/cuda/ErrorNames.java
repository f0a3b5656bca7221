package dev.panamax.cuda;

import dev.panamax.bindings.cuda.cuda_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Names and describes {@code CUresult} codes; the driver's table, or another one in tests. */
interface ErrorNames {
    /** The name of a code, for example {@code CUDA_ERROR_OUT_OF_MEMORY}; {@code null} when unknown. */
    String name(int code);

    /** The description of a code, for example {@code out of memory}; {@code null} when unknown. */
    String description(int code);

    /** The driver's table: {@code cuGetErrorName} and {@code cuGetErrorString}. */
    ErrorNames DRIVER = new ErrorNames() {
        @Override
        public String name(int code) {
            return lookup(code, true);
        }

        @Override
        public String description(int code) {
            return lookup(code, false);
        }

        private static String lookup(int code, boolean name) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment p = arena.allocate(ValueLayout.ADDRESS);
                int rc = name ? cuda_h.cuGetErrorName(code, p) : cuda_h.cuGetErrorString(code, p);
                MemorySegment s = p.get(ValueLayout.ADDRESS, 0);
                // An unknown code makes these calls fail and leave the pointer NULL.
                return rc != 0 || s.address() == 0 ? null : s.reinterpret(4096).getString(0);
            } catch (LinkageError e) { // no library: the caller falls back to the number
                return null;
            }
        }
    };
}
