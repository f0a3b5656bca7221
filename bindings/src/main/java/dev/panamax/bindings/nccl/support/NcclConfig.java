package dev.panamax.bindings.nccl.support;

import dev.panamax.bindings.nccl.ncclConfig_v21700;
import dev.panamax.bindings.nccl.nccl_h;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;

/**
 * The NCCL macros jextract cannot turn into Java: {@code NCCL_CONFIG_INITIALIZER} and {@code NCCL_VERSION}.
 * None of these loads libnccl.
 */
public final class NcclConfig {
    private NcclConfig() {
    }

    /**
     * <pre>{@code
     * #define NCCL_VERSION(X,Y,Z) (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) \
     *                                                     : (X) * 10000 + (Y) * 100 + (Z))
     * }</pre>
     */
    public static int NCCL_VERSION(int x, int y, int z) {
        return (x <= 2 && y <= 8) ? x * 1000 + y * 100 + z : x * 10000 + y * 100 + z;
    }

    /** {@code ncclConfig_t config = NCCL_CONFIG_INITIALIZER;} in memory from {@code allocator}. */
    public static MemorySegment allocate(SegmentAllocator allocator) {
        return initialize(allocator.allocate(ncclConfig_v21700.layout()));
    }

    /**
     * Sets {@code config} to {@code NCCL_CONFIG_INITIALIZER}:
     * <pre>{@code
     * #define NCCL_CONFIG_INITIALIZER {                                        \
     *   sizeof(ncclConfig_t),                             // size           \
     *   0xcafebeef,                                       // magic          \
     *   NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), // version        \
     *   NCCL_CONFIG_UNDEF_INT,                            // blocking       \
     *   NCCL_CONFIG_UNDEF_INT,                            // cgaClusterSize \
     *   NCCL_CONFIG_UNDEF_INT,                            // minCTAs        \
     *   NCCL_CONFIG_UNDEF_INT,                            // maxCTAs        \
     *   NCCL_CONFIG_UNDEF_PTR,                            // netName        \
     *   NCCL_CONFIG_UNDEF_INT                             // splitShare     \
     * }
     * }</pre>
     * with {@code NCCL_CONFIG_UNDEF_INT} = {@code INT_MIN} and {@code NCCL_CONFIG_UNDEF_PTR} = {@code NULL}.
     *
     * @return {@code config}
     */
    public static MemorySegment initialize(MemorySegment config) {
        MemorySegment c = config.asSlice(0, ncclConfig_v21700.sizeof());
        c.fill((byte) 0); // padding, as a C aggregate initializer leaves it
        ncclConfig_v21700.size(c, ncclConfig_v21700.sizeof());
        ncclConfig_v21700.magic(c, nccl_h.NCCL_CONFIG_MAGIC());
        ncclConfig_v21700.version(c, nccl_h.NCCL_VERSION_CODE());
        ncclConfig_v21700.blocking(c, nccl_h.NCCL_CONFIG_UNDEF_INT());
        ncclConfig_v21700.cgaClusterSize(c, nccl_h.NCCL_CONFIG_UNDEF_INT());
        ncclConfig_v21700.minCTAs(c, nccl_h.NCCL_CONFIG_UNDEF_INT());
        ncclConfig_v21700.maxCTAs(c, nccl_h.NCCL_CONFIG_UNDEF_INT());
        ncclConfig_v21700.netName(c, MemorySegment.NULL);
        ncclConfig_v21700.splitShare(c, nccl_h.NCCL_CONFIG_UNDEF_INT());
        return config;
    }
}
