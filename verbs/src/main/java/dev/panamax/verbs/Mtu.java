package dev.panamax.verbs;

/** Conversions between MTUs in bytes and {@code enum ibv_mtu} ({@code IBV_MTU_256 = 1} ... {@code IBV_MTU_4096 = 5}).
 * */
final class Mtu {
    private Mtu() {
    }

    /** The bytes of an {@code enum ibv_mtu} value. */
    static int bytes(int ibvMtu) {
        if (ibvMtu < 1 || ibvMtu > 5) {
            throw new IllegalArgumentException("not an ibv_mtu value (1..5): " + ibvMtu);
        }
        return 128 << ibvMtu;
    }

    /**
     * The {@code enum ibv_mtu} value of an MTU given either in bytes (256, 512, 1024, 2048, 4096) or already
     * as an {@code ibv_mtu} value (1 ... 5), as {@link PortInfo#activeMtu()} reports it.
     */
    static int toIbv(int mtu) {
        return switch (mtu) {
            case 1, 2, 3, 4, 5 -> mtu;
            case 256 -> 1;
            case 512 -> 2;
            case 1024 -> 3;
            case 2048 -> 4;
            case 4096 -> 5;
            default -> throw new IllegalArgumentException(
                    "MTU must be 256, 512, 1024, 2048 or 4096 bytes, or an ibv_mtu value 1..5: " + mtu);
        };
    }
}
