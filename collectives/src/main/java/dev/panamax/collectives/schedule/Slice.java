package dev.panamax.collectives.schedule;

/**
 * A range of elements of one of a rank's buffers: the caller's send or receive buffer, or a
 * scratch buffer of the schedule. Offsets and counts are in elements, so one schedule serves
 * every data type of the same element size.
 */
public record Slice(int buffer, long offset, long count) {
    /** The caller's send buffer. */
    public static final int SEND = 0;
    /** The caller's receive buffer. */
    public static final int RECV = 1;

    public Slice {
        if (buffer < 0) {
            throw new IllegalArgumentException("buffer id must be >= 0: " + buffer);
        }
        if (offset < 0 || count < 0) {
            throw new IllegalArgumentException("negative offset or count: " + offset + ", " + count);
        }
    }

    /** The buffer id of scratch buffer {@code k}. */
    public static int scratch(int k) {
        return 2 + k;
    }

    public static Slice send(long offset, long count) {
        return new Slice(SEND, offset, count);
    }

    public static Slice recv(long offset, long count) {
        return new Slice(RECV, offset, count);
    }

    public long end() {
        return offset + count;
    }

    /** A sub-range, {@code offset} relative to this slice. */
    public Slice sub(long offset, long count) {
        if (offset < 0 || count < 0 || offset + count > this.count) {
            throw new IllegalArgumentException("sub-slice [" + offset + ", +" + count + ") outside " + this);
        }
        return new Slice(buffer, this.offset + offset, count);
    }

    /** True when both slices name the same buffer and their ranges intersect. */
    public boolean overlaps(Slice o) {
        return buffer == o.buffer && offset < o.end() && o.offset < end() && count > 0 && o.count > 0;
    }

    public static String bufferName(int buffer) {
        return switch (buffer) {
            case SEND -> "send";
            case RECV -> "recv";
            default -> "tmp" + (buffer - 2);
        };
    }

    @Override
    public String toString() {
        return bufferName(buffer) + "[" + offset + ":" + end() + "]";
    }
}
