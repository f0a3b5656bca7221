package dev.panamax.verbs;

/**
 * The attributes of a device port that connecting a queue pair needs ({@code struct ibv_port_attr}).
 *
 * @param state          {@code enum ibv_port_state}: 1 down, 2 init, 3 armed, 4 active
 * @param activeMtu      {@code enum ibv_mtu}: 1 = 256 bytes ... 5 = 4096 bytes
 * @param maxMtu         {@code enum ibv_mtu}
 * @param lid            the local identifier (InfiniBand; 0 on RoCE)
 * @param linkLayer      1 InfiniBand, 2 Ethernet (RoCE), 0 unspecified
 * @param gidTableLength the number of GID table entries
 */
public record PortInfo(int state, int activeMtu, int maxMtu, int lid, int linkLayer, int gidTableLength) {
    /** {@code IBV_PORT_ACTIVE}. */
    public static final int STATE_ACTIVE = 4;
    /** {@code IBV_LINK_LAYER_INFINIBAND}. */
    public static final int LINK_LAYER_INFINIBAND = 1;
    /** {@code IBV_LINK_LAYER_ETHERNET}. */
    public static final int LINK_LAYER_ETHERNET = 2;

    /** Whether the port is active (it can carry traffic). */
    public boolean isActive() {
        return state == STATE_ACTIVE;
    }

    /** Whether the link layer is Ethernet, that is RoCE: queue pairs need a GID index. */
    public boolean isEthernet() {
        return linkLayer == LINK_LAYER_ETHERNET;
    }

    /** The active MTU in bytes (256 ... 4096). */
    public int activeMtuBytes() {
        return Mtu.bytes(activeMtu);
    }
}
