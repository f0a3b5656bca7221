package dev.panamax.verbs;

import java.util.HexFormat;

/** GID helpers. */
final class Gids {
    private Gids() {
    }

    /** Whether the GID is an IPv4-mapped IPv6 address ({@code ::ffff:a.b.c.d}), as RoCE v2 GIDs of IPv4 interfaces are.
     * */
    static boolean isIpv4Mapped(byte[] gid) {
        for (int i = 0; i < 10; i++) {
            if (gid[i] != 0) {
                return false;
            }
        }
        return gid[10] == (byte) 0xFF && gid[11] == (byte) 0xFF;
    }

    static boolean isZero(byte[] gid) {
        for (byte b : gid) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }

    /** {@code fe80:0000:...} groups of four hex digits, or {@code ::ffff:10.0.2.15} for IPv4-mapped GIDs. */
    static String format(byte[] gid) {
        if (isIpv4Mapped(gid)) {
            return "::ffff:" + (gid[12] & 0xFF) + "." + (gid[13] & 0xFF) + "." + (gid[14] & 0xFF) + "."
                    + (gid[15] & 0xFF);
        }
        String hex = HexFormat.of().formatHex(gid);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < 32; i += 4) {
            sb.append(i == 0 ? "" : ":").append(hex, i, i + 4);
        }
        return sb.toString();
    }
}
