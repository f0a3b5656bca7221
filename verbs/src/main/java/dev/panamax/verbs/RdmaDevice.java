package dev.panamax.verbs;

/**
 * An RDMA device as listed by {@code ibv_get_device_list}.
 *
 * @param name      the kernel device name, for example {@code mlx5_0} or {@code rxe0}
 * @param guid      the node GUID, in host byte order
 * @param transport the transport type: {@code InfiniBand} (also for RoCE; the port's link layer tells them
 *                  apart), {@code iWARP}, {@code usNIC}, {@code usNIC UDP}, {@code unspecified} or
 *                  {@code unknown}
 */
public record RdmaDevice(String name, long guid, String transport) {
    /** {@code enum ibv_transport_type} in words. */
    static String transportName(int type) {
        return switch (type) {
            case 0 -> "InfiniBand";
            case 1 -> "iWARP";
            case 2 -> "usNIC";
            case 3 -> "usNIC UDP";
            case 4 -> "unspecified";
            default -> "unknown";
        };
    }

    @Override
    public String toString() {
        return name + " (guid " + String.format("%016x", guid) + ", " + transport + ")";
    }
}
