package dev.panamax.bindings;

import dev.panamax.bindings.nccl.ncclConfig_t;
import dev.panamax.bindings.nccl.ncclUniqueId;
import dev.panamax.bindings.nccl.nccl_h;
import dev.panamax.bindings.nccl.support.NcclConfig;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class NcclBindingsTest {

    @Test
    void constantsAndLayoutsWorkWithoutLoadingTheLibrary() {
        assertEquals(0, nccl_h.ncclSuccess());
        assertEquals(7, nccl_h.ncclInProgress());
        assertEquals(7, nccl_h.ncclFloat32());
        assertEquals(9, nccl_h.ncclBfloat16());
        assertEquals(4, nccl_h.ncclAvg());
        assertEquals(128, ncclUniqueId.sizeof());
        assertEquals(128, nccl_h.NCCL_UNIQUE_ID_BYTES());
        assertEquals(Integer.MIN_VALUE, nccl_h.NCCL_CONFIG_UNDEF_INT());
    }

    @Test
    void configInitializerMatchesTheMacro() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment c = NcclConfig.allocate(arena);
            assertEquals(48, ncclConfig_t.sizeof());
            assertEquals(ncclConfig_t.sizeof(), ncclConfig_t.size(c));
            assertEquals(0xcafebeef, ncclConfig_t.magic(c));
            assertEquals(21801, ncclConfig_t.version(c));
            assertEquals(NcclConfig.NCCL_VERSION(2, 18, 1), nccl_h.NCCL_VERSION_CODE());
            assertEquals(2801, NcclConfig.NCCL_VERSION(2, 8, 1));
            assertEquals(Integer.MIN_VALUE, ncclConfig_t.blocking(c));
            assertEquals(Integer.MIN_VALUE, ncclConfig_t.cgaClusterSize(c));
            assertEquals(Integer.MIN_VALUE, ncclConfig_t.minCTAs(c));
            assertEquals(Integer.MIN_VALUE, ncclConfig_t.maxCTAs(c));
            assertEquals(0L, ncclConfig_t.netName(c).address());
            assertEquals(Integer.MIN_VALUE, ncclConfig_t.splitShare(c));
        }
    }

    @Test
    void missingLibraryIsReportedCleanly() {
        assumeFalse(NativeLibrary.NCCL.isAvailable(), "libnccl.so.2 is available here");
        String cause = NativeLibrary.NCCL.unavailabilityCause();
        assertTrue(cause.contains("libnccl.so.2") && cause.contains("library not available"), cause);
        try (Arena arena = Arena.ofConfined()) {
            Throwable t = assertThrows(Throwable.class,
                    () -> nccl_h.ncclGetVersion(arena.allocate(ValueLayout.JAVA_INT)));
            String text = Throwables.chain(t);
            assertTrue(text.contains("ncclGetVersion") && text.contains("libnccl.so.2"), text);
            System.out.println("nccl: " + t.getMessage());
        }
    }

    @Test
    @Tag("gpu")
    void version() {
        assumeTrue(NativeLibrary.NCCL.isAvailable(), NativeLibrary.NCCL.unavailabilityCause());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment v = arena.allocate(ValueLayout.JAVA_INT);
            assertEquals(nccl_h.ncclSuccess(), nccl_h.ncclGetVersion(v));
            System.out.println("nccl: version " + v.get(ValueLayout.JAVA_INT, 0));
        }
    }
}
