package dev.panamax.cuda;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * The identity of an NCCL communicator being created ({@code ncclUniqueId}, {@value #BYTE_SIZE} opaque bytes):
 * one rank makes it with {@link Nccl#newUniqueId()} and hands it to the others (for example as
 * {@link #toHex()} through a bootstrap store), and every rank passes it to {@link NcclCommunicator#create}.
 * Immutable: the bytes are copied in and out.
 *
 * @param bytes the {@value #BYTE_SIZE} bytes of the id
 */
public record NcclUniqueId(byte[] bytes) {
    /** {@code NCCL_UNIQUE_ID_BYTES}. */
    public static final int BYTE_SIZE = 128;

    private static final HexFormat HEX = HexFormat.of();

    /**
     * @throws IllegalArgumentException when {@code bytes} is not {@value #BYTE_SIZE} bytes long
     */
    public NcclUniqueId {
        if (bytes == null) {
            throw new NullPointerException("bytes");
        }
        if (bytes.length != BYTE_SIZE) {
            throw new IllegalArgumentException("an NCCL unique id has " + BYTE_SIZE + " bytes, not " + bytes.length);
        }
        bytes = bytes.clone();
    }

    /** The id from {@link #toHex()}'s {@code 2 * BYTE_SIZE} hex digits (either case). */
    public static NcclUniqueId fromHex(String hex) {
        if (hex.length() != 2 * BYTE_SIZE) {
            throw new IllegalArgumentException("an NCCL unique id has " + 2 * BYTE_SIZE + " hex digits, not "
                    + hex.length());
        }
        return new NcclUniqueId(HEX.parseHex(hex));
    }

    /** A copy of the bytes. */
    @Override
    public byte[] bytes() {
        return bytes.clone();
    }

    /** The bytes as {@code 2 * BYTE_SIZE} lower-case hex digits. */
    public String toHex() {
        return HEX.formatHex(bytes);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof NcclUniqueId id && Arrays.equals(id.bytes, bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    /** The first 8 bytes in hex, enough to tell ids apart in messages. */
    @Override
    public String toString() {
        return "NcclUniqueId[" + HEX.formatHex(bytes, 0, 8) + "...]";
    }
}
