package dev.panamax.bindings;

import dev.panamax.bindings.verbs.ibv_port_attr;
import dev.panamax.bindings.verbs.ibv_send_wr;
import dev.panamax.bindings.verbs.ibv_wc;
import dev.panamax.bindings.verbs.support.VerbsErrno;
import dev.panamax.bindings.verbs.support.VerbsInline;
import dev.panamax.bindings.verbs.verbs_h;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class VerbsBindingsTest {

    @Test
    void constantsAndLayoutsWorkWithoutLoadingTheLibrary() {
        assertEquals(3, verbs_h.IBV_QPS_RTS());
        assertEquals(2, verbs_h.IBV_QPT_RC());
        assertEquals(1, verbs_h.IBV_ACCESS_LOCAL_WRITE());
        assertEquals(0, verbs_h.IBV_WR_RDMA_WRITE());
        assertEquals(2, verbs_h.IBV_SEND_SIGNALED());
        assertEquals(0, verbs_h.IBV_WC_SUCCESS());
        assertEquals(5, verbs_h.IBV_MTU_4096());
        assertEquals(4, verbs_h.IBV_PORT_ACTIVE());
        assertEquals(48, ibv_wc.sizeof());
        assertEquals(128, ibv_send_wr.sizeof());
        assertTrue(ibv_port_attr.sizeof() > 0);
    }

    /** On a machine without RDMA in the kernel, ibv_get_device_list returns NULL with errno ENOSYS. */
    @Test
    void deviceListReportsDevicesOrTheErrno() {
        assumeTrue(NativeLibrary.IBVERBS.isAvailable(), NativeLibrary.IBVERBS.unavailabilityCause());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = Errno.allocate(arena);
            MemorySegment num = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment list = VerbsErrno.ibv_get_device_list(errno, num);
            if (list.equals(MemorySegment.NULL) || list.address() == 0) {
                int e = Errno.errno(errno);
                assertNotEquals(0, e, "ibv_get_device_list returned NULL without errno");
                System.out.println("verbs: no devices: ibv_get_device_list returned NULL, errno " + Errno.describe(e));
                return;
            }
            int n = num.get(ValueLayout.JAVA_INT, 0);
            System.out.println("verbs: " + n + " device(s)" + (n == 0 ? " (no devices)" : ""));
            MemorySegment devices = list.reinterpret((n + 1) * ValueLayout.ADDRESS.byteSize());
            for (int i = 0; i < n; i++) {
                MemorySegment dev = devices.getAtIndex(ValueLayout.ADDRESS, i);
                System.out.println("  " + verbs_h.ibv_get_device_name(dev).reinterpret(256).getString(0));
            }
            assertEquals(0, devices.getAtIndex(ValueLayout.ADDRESS, n).address(), "list is NULL-terminated");
            verbs_h.ibv_free_device_list(list);
        }
    }

    /** Opens the first device and queries port 1 through the inline ibv_query_port. */
    @Test
    @Tag("rdma")
    void openFirstDeviceAndQueryPort() {
        assumeTrue(NativeLibrary.IBVERBS.isAvailable(), NativeLibrary.IBVERBS.unavailabilityCause());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = Errno.allocate(arena);
            MemorySegment num = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment list = VerbsErrno.ibv_get_device_list(errno, num);
            assumeTrue(list.address() != 0, () -> "no RDMA devices: errno " + Errno.describe(Errno.errno(errno)));
            try {
                int n = num.get(ValueLayout.JAVA_INT, 0);
                assumeTrue(n > 0, "no RDMA devices");
                MemorySegment dev = list.reinterpret(ValueLayout.ADDRESS.byteSize()).get(ValueLayout.ADDRESS, 0);
                MemorySegment ctx = VerbsErrno.ibv_open_device(errno, dev);
                assertNotEquals(0, ctx.address(), () -> "ibv_open_device: " + Errno.describe(Errno.errno(errno)));
                try {
                    MemorySegment attr = arena.allocate(ibv_port_attr.layout());
                    assertEquals(0, VerbsInline.ibv_query_port(ctx, (byte) 1, attr));
                    System.out.println("port 1 state " + ibv_port_attr.state(attr));
                } finally {
                    assertEquals(0, verbs_h.ibv_close_device(ctx));
                }
            } finally {
                verbs_h.ibv_free_device_list(list);
            }
        }
    }
}
