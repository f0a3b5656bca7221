package dev.panamax.bindings.verbs.support;

import dev.panamax.bindings.NativeLibrary;
import dev.panamax.bindings.verbs.ibv_gid;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * GID table entries with their type (InfiniBand, RoCE v1, RoCE v2), which {@code ibv_query_gid} does not
 * report. {@code ibv_query_gid_ex} and {@code ibv_query_gid_table} are static inline functions over the
 * exported {@code _ibv_query_gid_ex} and {@code _ibv_query_gid_table} (rdma-core 32 and later, symbol version
 * {@code IBVERBS_1.11}); this class calls those exports as the header does. The layout of
 * {@code struct ibv_gid_entry} is written here by hand and checked against gcc by {@code LayoutCheckTest}.
 *
 * <p>Like the C functions, both return an error number directly (negative for {@code _ibv_query_gid_table})
 * rather than through errno. {@link #isSupported()} says whether the loaded libibverbs exports them.
 */
public final class VerbsGid {
    private VerbsGid() {
    }

    /** {@code enum ibv_gid_type}. */
    public static final int IBV_GID_TYPE_IB = 0, IBV_GID_TYPE_ROCE_V1 = 1, IBV_GID_TYPE_ROCE_V2 = 2;

    /**
     * <pre>{@code
     * struct ibv_gid_entry {
     *         union ibv_gid gid;
     *         uint32_t gid_index;
     *         uint32_t port_num;
     *         uint32_t gid_type; // enum ibv_gid_type
     *         uint32_t ndev_ifindex;
     * };
     * }</pre>
     */
    private static final StructLayout ENTRY = MemoryLayout.structLayout(
            ibv_gid.layout().withName("gid"),
            ValueLayout.JAVA_INT.withName("gid_index"),
            ValueLayout.JAVA_INT.withName("port_num"),
            ValueLayout.JAVA_INT.withName("gid_type"),
            ValueLayout.JAVA_INT.withName("ndev_ifindex")).withName("ibv_gid_entry");

    private static final long GID = ENTRY.byteOffset(MemoryLayout.PathElement.groupElement("gid"));
    private static final long GID_INDEX = ENTRY.byteOffset(MemoryLayout.PathElement.groupElement("gid_index"));
    private static final long PORT_NUM = ENTRY.byteOffset(MemoryLayout.PathElement.groupElement("port_num"));
    private static final long GID_TYPE = ENTRY.byteOffset(MemoryLayout.PathElement.groupElement("gid_type"));

    /** The layout of {@code struct ibv_gid_entry}. */
    public static StructLayout layout() {
        return ENTRY;
    }

    /** The 16 bytes of the entry's GID (a slice of {@code entry}). */
    public static MemorySegment gid(MemorySegment entry) {
        return entry.asSlice(GID, 16);
    }

    public static int gid_index(MemorySegment entry) {
        return entry.get(ValueLayout.JAVA_INT, GID_INDEX);
    }

    public static int port_num(MemorySegment entry) {
        return entry.get(ValueLayout.JAVA_INT, PORT_NUM);
    }

    public static int gid_type(MemorySegment entry) {
        return entry.get(ValueLayout.JAVA_INT, GID_TYPE);
    }

    /** Whether libibverbs exports {@code _ibv_query_gid_ex} and {@code _ibv_query_gid_table}. Loads it. */
    public static boolean isSupported() {
        return NativeLibrary.IBVERBS.isAvailable() && Handles.QUERY_GID_EX != null && Handles.QUERY_GID_TABLE != null;
    }

    /**
     * <pre>{@code
     * static inline int ibv_query_gid_ex(struct ibv_context *context,
     *                                    uint32_t port_num, uint32_t gid_index,
     *                                    struct ibv_gid_entry *entry, uint32_t flags)
     * {
     *         return _ibv_query_gid_ex(context, port_num, gid_index, entry, flags,
     *                                  sizeof(*entry));
     * }
     * }</pre>
     * Returns 0 or an error number ({@code ENODATA} for an empty entry).
     *
     * @throws UnsupportedOperationException when the library lacks {@code _ibv_query_gid_ex}
     */
    public static int ibv_query_gid_ex(MemorySegment context, int port_num, int gid_index, MemorySegment entry,
            int flags) {
        MethodHandle h = require(Handles.QUERY_GID_EX, "_ibv_query_gid_ex");
        try {
            return (int) h.invokeExact(context, port_num, gid_index, entry, flags, ENTRY.byteSize());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * <pre>{@code
     * static inline ssize_t ibv_query_gid_table(struct ibv_context *context,
     *                                           struct ibv_gid_entry *entries,
     *                                           size_t max_entries, uint32_t flags)
     * {
     *         return _ibv_query_gid_table(context, entries, max_entries, flags,
     *                                     sizeof(*entries));
     * }
     * }</pre>
     * Fills {@code entries} with the valid GIDs of all ports and returns their number, or a negative error
     * number.
     *
     * @throws UnsupportedOperationException when the library lacks {@code _ibv_query_gid_table}
     */
    public static long ibv_query_gid_table(MemorySegment context, MemorySegment entries, long max_entries,
            int flags) {
        MethodHandle h = require(Handles.QUERY_GID_TABLE, "_ibv_query_gid_table");
        try {
            return (long) h.invokeExact(context, entries, max_entries, flags, ENTRY.byteSize());
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static MethodHandle require(MethodHandle h, String symbol) {
        if (h == null) {
            throw new UnsupportedOperationException(symbol + " is not exported by the loaded "
                    + NativeLibrary.IBVERBS.soname() + " (needs rdma-core 32 or later)");
        }
        return h;
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }

    // Built on first use (which loads libibverbs); null when the symbol is missing.
    private static final class Handles {
        static final MethodHandle QUERY_GID_EX = find("_ibv_query_gid_ex", FunctionDescriptor.of(
                ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                ValueLayout.ADDRESS, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
        static final MethodHandle QUERY_GID_TABLE = find("_ibv_query_gid_table", FunctionDescriptor.of(
                ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));

        private static MethodHandle find(String symbol, FunctionDescriptor descriptor) {
            Optional<MemorySegment> address = NativeLibrary.IBVERBS.lookup().find(symbol);
            return address.map(a -> Linker.nativeLinker().downcallHandle(a, descriptor)).orElse(null);
        }
    }
}
