package dev.panamax.collectives.internal.transport;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * One rank's window for one-shot reductions: a small region of shared memory that its owner writes and every other
 * rank of the host reads (the shared-memory transport keeps it in the header of the rank's inbox, {@link
 * Link#ownWindow()}). A small all-reduce then needs one synchronisation: every rank writes its input into its own
 * window and publishes the call's sequence number; every rank waits until every window shows that number and folds
 * the windows' inputs in rank order.
 *
 * <p>Layout: a cache line with the capacity in bytes (written once, before the owner publishes the region to its
 * peers); then two blocks, one for odd and one for even calls. Two, so that a rank can publish call k+1 while a slower
 * rank still reads its call k; no more are needed, since a rank publishes k+1 only after it saw every window at k, that
 * is after every rank had finished reading call k-1's block (so a block a reader waits on holds call k-2 or call k). A
 * block's first cache line holds the call's sequence number (release-stored after the rest of the block), its byte
 * count, a code of its type and operation, the scalar of a pre-multiplied sum and the first
 * {@value #FIRST_LINE_DATA_BYTES} bytes of its data; the rest of the data follows. So the line a reader polls brings
 * the call's header, and all of a call of up to {@value #FIRST_LINE_DATA_BYTES} bytes, with it: one transfer between
 * the CPUs' caches instead of a sequence line, a header line and a data line in turn. For calls of up to
 * {@value #POLLED_DATA_BYTES} bytes a poll also loads the other lines of the data (see {@link #shows(long, long)}), so
 * those come over in the same transfer time rather than after the first line.
 */
public final class SharedWindow {
    /** The most bytes a window can carry per call. */
    public static final long MAX_CAPACITY_BYTES = 4096;
    private static final long LINE = 64;
    private static final long B_SEQUENCE = 0;
    private static final long B_BYTES = 8;
    private static final long B_CODE = 16;
    private static final long B_SCALAR = 24;
    private static final long B_DATA = 32;
    /** The data a block's first line holds beside the header. */
    static final long FIRST_LINE_DATA_BYTES = LINE - B_DATA;
    /** Calls of up to this many bytes have every line of their data loaded by each poll. */
    static final long POLLED_DATA_BYTES = 512;
    private static final long BLOCK_BYTES = LINE + MAX_CAPACITY_BYTES;
    /** The bytes of a window region. */
    public static final long BYTES = LINE + 2 * BLOCK_BYTES;

    private static final long CAPACITY = 0;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final MemorySegment region;
    /** Where {@link #shows(long, long)} leaves the sum of the lines it loaded, so that the compiler keeps the loads. */
    private long polledSum;

    /** A window over {@code region} ({@link #BYTES} long, zeroed or {@link #initialize}d by its owner). */
    public SharedWindow(MemorySegment region) {
        if (region.byteSize() < BYTES) {
            throw new IllegalArgumentException("a shared window needs " + BYTES + " bytes, got " + region.byteSize());
        }
        this.region = region.asSlice(0, BYTES);
    }

    /** Owner, before peers can see the region: the most bytes per call it accepts (0: none). */
    public static void initialize(MemorySegment region, long capacityBytes) {
        if (capacityBytes < 0 || capacityBytes > MAX_CAPACITY_BYTES) {
            throw new IllegalArgumentException("a shared window carries 0 to " + MAX_CAPACITY_BYTES
                    + " bytes per call, not " + capacityBytes);
        }
        region.set(ValueLayout.JAVA_LONG, CAPACITY, capacityBytes);
    }

    /** The region, to read the data at {@link #dataOffset}. */
    public MemorySegment segment() {
        return region;
    }

    /** The most bytes per call the owner accepts. */
    public long capacityBytes() {
        return region.get(ValueLayout.JAVA_LONG, CAPACITY);
    }

    /** The last call the owner published (acquire: its block is visible once this is read). */
    public long sequence() {
        return Math.max((long) LONG.getAcquire(region, block(0) + B_SEQUENCE),
                (long) LONG.getAcquire(region, block(1) + B_SEQUENCE));
    }

    /**
     * Whether the owner has published call {@code sequence} (acquire: its block is visible once this is true); polls
     * the one line of that call's block.
     */
    public boolean shows(long sequence) {
        return shows(sequence, 0);
    }

    /**
     * {@link #shows(long)} for a call of {@code dataBytes} bytes: if it has at most {@value #POLLED_DATA_BYTES}, the
     * poll also loads the lines of its data past the first. The CPU issues those loads together with the polled one,
     * so on the poll that finds the call published its data comes over in the same transfer time, where reading it
     * after the poll took a second transfer. A line loaded before the writer wrote it is only a copy the writer then
     * invalidates; the reader reads the data again after the acquiring load, so it never reads it stale. Not for
     * larger calls: the lines a poll keeps taking back slow the writer's longer copy.
     */
    public boolean shows(long sequence, long dataBytes) {
        long block = block(sequence);
        boolean shown = (long) LONG.getAcquire(region, block + B_SEQUENCE) >= sequence;
        if (dataBytes > FIRST_LINE_DATA_BYTES && dataBytes <= POLLED_DATA_BYTES) {
            long sum = 0;
            for (long line = block + LINE; line < block + B_DATA + dataBytes; line += LINE) {
                sum += region.get(ValueLayout.JAVA_LONG, line);
            }
            polledSum = sum;
        }
        return shown;
    }

    /**
     * Owner: writes call {@code sequence}'s input ({@code bytes} of {@code src}), its code and scalar into the call's
     * block, then publishes the sequence number there. The data past the first line goes first and the first line
     * last, in one run of stores ending with the number: a reader polls that line, and a line it takes back between
     * two of the writer's stores costs the writer another transfer.
     */
    public void publish(long sequence, MemorySegment src, long bytes, long code, double scalar) {
        long block = block(sequence);
        if (bytes > FIRST_LINE_DATA_BYTES) {
            MemorySegment.copy(src, FIRST_LINE_DATA_BYTES, region, block + LINE, bytes - FIRST_LINE_DATA_BYTES);
        }
        region.set(ValueLayout.JAVA_LONG, block + B_BYTES, bytes);
        region.set(ValueLayout.JAVA_LONG, block + B_CODE, code);
        region.set(ValueLayout.JAVA_DOUBLE, block + B_SCALAR, scalar);
        MemorySegment.copy(src, 0, region, block + B_DATA, Math.min(bytes, FIRST_LINE_DATA_BYTES));
        LONG.setRelease(region, block + B_SEQUENCE, sequence);
    }

    /** Where call {@code sequence}'s data lies in {@link #segment()}. */
    public long dataOffset(long sequence) {
        return block(sequence) + B_DATA;
    }

    /** The byte count call {@code sequence} was published with. */
    public long byteCount(long sequence) {
        return region.get(ValueLayout.JAVA_LONG, block(sequence) + B_BYTES);
    }

    /** The code call {@code sequence} was published with. */
    public long code(long sequence) {
        return region.get(ValueLayout.JAVA_LONG, block(sequence) + B_CODE);
    }

    /** The scalar call {@code sequence} was published with. */
    public double scalar(long sequence) {
        return region.get(ValueLayout.JAVA_DOUBLE, block(sequence) + B_SCALAR);
    }

    private static long block(long sequence) {
        return LINE + (sequence & 1) * BLOCK_BYTES;
    }
}
