package dev.panamax.verbs;

import dev.panamax.bindings.Errno;
import dev.panamax.bindings.NativeLibrary;
import dev.panamax.bindings.verbs.ibv_device;
import dev.panamax.bindings.verbs.support.VerbsErrno;
import dev.panamax.bindings.verbs.verbs_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * Entry point: is libibverbs there, which RDMA devices are there, open one.
 *
 * <p>libibverbs is loaded on first use (see {@code docs/reference/bindings.md} for pointing at a library outside the
 * loader's path). Without it {@link #isAvailable()} is false and {@link #devices()} and {@link #open} throw
 * {@link IllegalStateException} with {@link #unavailabilityCause()}.
 */
public final class Verbs {
    private Verbs() {
    }

    /** Whether libibverbs can be loaded (it may still list no devices). */
    public static boolean isAvailable() {
        return NativeLibrary.IBVERBS.isAvailable();
    }

    /** Why libibverbs cannot be loaded, naming the library and the settings; {@code null} when it can. */
    public static String unavailabilityCause() {
        return NativeLibrary.IBVERBS.unavailabilityCause();
    }

    /**
     * The RDMA devices, in the order libibverbs lists them; empty when there are none, including when the
     * kernel has no RDMA support ({@code ibv_get_device_list} fails with {@code ENOSYS}).
     */
    public static List<RdmaDevice> devices() {
        requireLibrary();
        try (Arena arena = Arena.ofConfined()) {
            DeviceList list = DeviceList.get(arena);
            if (list == null) {
                return List.of();
            }
            try {
                List<RdmaDevice> devices = new ArrayList<>(list.count());
                for (int i = 0; i < list.count(); i++) {
                    MemorySegment device = list.device(i);
                    devices.add(new RdmaDevice(name(device), fromBigEndian(verbs_h.ibv_get_device_guid(device)),
                            RdmaDevice.transportName(ibv_device.transport_type(device))));
                }
                return List.copyOf(devices);
            } finally {
                list.free();
            }
        }
    }

    /**
     * Opens a device.
     *
     * @param deviceName the device name ({@link RdmaDevice#name()}), or {@code null} for the first device
     * @throws IllegalArgumentException when there is no such device (the message lists those there are)
     * @throws VerbsException           when {@code ibv_open_device} fails
     */
    public static VerbsContext open(String deviceName) {
        requireLibrary();
        try (Arena arena = Arena.ofConfined()) {
            DeviceList list = DeviceList.get(arena);
            if (list == null || list.count() == 0) {
                throw new IllegalArgumentException("no RDMA devices" + (list == null
                        ? " (ibv_get_device_list: the kernel has no RDMA support, ENOSYS)" : ""));
            }
            try {
                List<String> names = new ArrayList<>();
                for (int i = 0; i < list.count(); i++) {
                    MemorySegment device = list.device(i);
                    String name = name(device);
                    names.add(name);
                    if (deviceName == null || deviceName.equals(name)) {
                        MemorySegment errno = Errno.allocate(arena);
                        MemorySegment context = VerbsErrno.ibv_open_device(errno, device);
                        if (context.address() == 0) {
                            throw VerbsException.errno("ibv_open_device", Errno.errno(errno), "device " + name);
                        }
                        return new VerbsContext(context, name);
                    }
                }
                throw new IllegalArgumentException("no RDMA device named " + deviceName + "; devices: " + names);
            } finally {
                list.free(); // opened contexts stay valid (ibv_get_device_list(3))
            }
        }
    }

    static void requireLibrary() {
        if (!isAvailable()) {
            throw new IllegalStateException("RDMA verbs are not available: " + unavailabilityCause());
        }
    }

    private static String name(MemorySegment device) {
        return verbs_h.ibv_get_device_name(device).reinterpret(ibv_device.name$layout().byteSize()).getString(0);
    }

    /** A {@code __be64} as returned by the library, in host order. */
    static long fromBigEndian(long value) {
        return ByteOrder.nativeOrder() == ByteOrder.BIG_ENDIAN ? value : Long.reverseBytes(value);
    }

    /** The array returned by {@code ibv_get_device_list}; freed with {@link #free()}. */
    private record DeviceList(MemorySegment array, int count) {
        /** The list, or null when the kernel has no RDMA support (ENOSYS); throws for other failures. */
        static DeviceList get(Arena arena) {
            MemorySegment errno = Errno.allocate(arena);
            MemorySegment count = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment array = VerbsErrno.ibv_get_device_list(errno, count);
            if (array.address() == 0) {
                int e = Errno.errno(errno);
                if (e == Errno.ENOSYS) {
                    return null;
                }
                throw VerbsException.errno("ibv_get_device_list", e, null);
            }
            int n = count.get(ValueLayout.JAVA_INT, 0);
            return new DeviceList(array.reinterpret((n + 1) * ValueLayout.ADDRESS.byteSize()), n);
        }

        MemorySegment device(int i) {
            return array.getAtIndex(ValueLayout.ADDRESS, i).reinterpret(ibv_device.sizeof());
        }

        void free() {
            verbs_h.ibv_free_device_list(array);
        }
    }
}
