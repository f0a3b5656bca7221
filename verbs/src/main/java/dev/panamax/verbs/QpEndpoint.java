package dev.panamax.verbs;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * What a peer needs to connect its queue pair to ours: queue pair number, initial packet sequence number,
 * LID (InfiniBand) and GID (RoCE, or InfiniBand across subnets). Exchanged out of band, for example through
 * a TCP bootstrap, as {@link #toBytes()}.
 *
 * @param qpNumber the queue pair number (24 bits)
 * @param psn      the initial packet sequence number (24 bits)
 * @param lid      the port's LID (16 bits; 0 on RoCE)
 * @param gid      the 16-byte GID (all zero when no GID is used)
 */
public record QpEndpoint(int qpNumber, int psn, int lid, byte[] gid) {
    /** The length of {@link #toBytes()}: qpNumber, psn, lid (4 bytes each, big-endian) and the GID. */
    public static final int BYTES = 4 + 4 + 4 + 16;

    private static final int MASK_24 = 0xFF_FFFF;

    public QpEndpoint {
        if ((qpNumber & ~MASK_24) != 0) {
            throw new IllegalArgumentException("qpNumber must fit in 24 bits: " + qpNumber);
        }
        if ((psn & ~MASK_24) != 0) {
            throw new IllegalArgumentException("psn must fit in 24 bits: " + psn);
        }
        if ((lid & ~0xFFFF) != 0) {
            throw new IllegalArgumentException("lid must fit in 16 bits: " + lid);
        }
        if (gid == null || gid.length != 16) {
            throw new IllegalArgumentException("gid must be 16 bytes: " + (gid == null ? "null" : gid.length));
        }
        gid = gid.clone();
    }

    /** A copy of the GID. */
    @Override
    public byte[] gid() {
        return gid.clone();
    }

    /** Whether a GID is set (not all zero). */
    public boolean hasGid() {
        for (byte b : gid) {
            if (b != 0) {
                return true;
            }
        }
        return false;
    }

    /** The {@link #BYTES}-byte encoding: qpNumber, psn, lid as big-endian ints, then the GID. */
    public byte[] toBytes() {
        return ByteBuffer.allocate(BYTES).order(ByteOrder.BIG_ENDIAN)
                .putInt(qpNumber).putInt(psn).putInt(lid).put(gid).array();
    }

    /** Decodes {@link #toBytes()}; rejects input of another length or with out-of-range fields. */
    public static QpEndpoint fromBytes(byte[] bytes) {
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException("a QpEndpoint is " + BYTES + " bytes, got " + bytes.length);
        }
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.BIG_ENDIAN);
        int qpNumber = b.getInt();
        int psn = b.getInt();
        int lid = b.getInt();
        byte[] gid = new byte[16];
        b.get(gid);
        return new QpEndpoint(qpNumber, psn, lid, gid);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof QpEndpoint e && e.qpNumber == qpNumber && e.psn == psn && e.lid == lid
                && Arrays.equals(e.gid, gid);
    }

    @Override
    public int hashCode() {
        return ((qpNumber * 31 + psn) * 31 + lid) * 31 + Arrays.hashCode(gid);
    }

    @Override
    public String toString() {
        return "QpEndpoint[qp " + qpNumber + ", psn " + psn + ", lid " + lid + ", gid " + Gids.format(gid) + "]";
    }
}
