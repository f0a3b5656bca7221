package dev.panamax.cuda;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * An exported device allocation ({@code CUipcMemHandle}, {@value #BYTE_SIZE} opaque bytes) from
 * {@link DeviceMemory#ipcHandle()}, to send to another process, which maps it with
 * {@link CudaContext#openIpc(IpcMemoryHandle)}. Immutable: the bytes are copied in and out.
 *
 * @param bytes the {@value #BYTE_SIZE} bytes of the handle
 */
public record IpcMemoryHandle(byte[] bytes) {
    /** {@code CU_IPC_HANDLE_SIZE}. */
    public static final int BYTE_SIZE = 64;

    private static final HexFormat HEX = HexFormat.of();

    /**
     * @throws IllegalArgumentException when {@code bytes} is not {@value #BYTE_SIZE} bytes long
     */
    public IpcMemoryHandle {
        if (bytes == null) {
            throw new NullPointerException("bytes");
        }
        if (bytes.length != BYTE_SIZE) {
            throw new IllegalArgumentException("a CUDA IPC memory handle has " + BYTE_SIZE + " bytes, not "
                    + bytes.length);
        }
        bytes = bytes.clone();
    }

    /** The handle from its {@value #BYTE_SIZE} bytes (copied). */
    public static IpcMemoryHandle fromBytes(byte[] bytes) {
        return new IpcMemoryHandle(bytes);
    }

    /** The handle from {@link #toHex()}'s 128 hex digits. */
    public static IpcMemoryHandle fromHex(String hex) {
        if (hex.length() != 2 * BYTE_SIZE) {
            throw new IllegalArgumentException("a CUDA IPC memory handle has " + 2 * BYTE_SIZE + " hex digits, not "
                    + hex.length());
        }
        return new IpcMemoryHandle(HEX.parseHex(hex));
    }

    /** A copy of the bytes. */
    @Override
    public byte[] bytes() {
        return bytes.clone();
    }

    /** A copy of the bytes. */
    public byte[] toBytes() {
        return bytes.clone();
    }

    /** The bytes as 128 lower-case hex digits. */
    public String toHex() {
        return HEX.formatHex(bytes);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IpcMemoryHandle h && Arrays.equals(h.bytes, bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    /** The first 8 bytes in hex, enough to tell handles apart in messages. */
    @Override
    public String toString() {
        return "IpcMemoryHandle[" + HEX.formatHex(bytes, 0, 8) + "...]";
    }
}
