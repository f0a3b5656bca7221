package dev.panamax.bench.perf;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Rank 0's rows on their way to its printer. A row whose timed calls took less than {@link #HOLD_UNDER_NANOS} in all
 * waits for the next longer row or the end of the sweep ({@link #flush}), then goes out with it, in order. Printing a
 * row costs rank 0 tens of microseconds of CPU (formatting, and a write that wakes whatever reads the output); where
 * ranks outnumber the CPUs that debt fell on the next row's first timed call: 4 ranks on 2 CPUs, rows of 20 calls of
 * 16 B-4 KiB, one call of 15-75 us per row and means up to 1.6x those of the same rows printed at the end
 * (docs/results/performance.md). After a longer row the next one is longer still in a sweep, or the debt is one call
 * among many.
 */
final class HeldRows {
    /** Rows whose timed calls took less than this in all are held back. */
    static final long HOLD_UNDER_NANOS = 10_000_000;

    private final Consumer<Row> sink;
    private final int iters;
    private final List<Row> held = new ArrayList<>();

    /** {@code iters}: the timed calls per row, which with a row's mean time give how long it took. */
    HeldRows(Consumer<Row> sink, int iters) {
        this.sink = sink;
        this.iters = iters;
    }

    /** Takes the next row: holds it when it was short, else hands it and every row held before it to the sink. */
    void add(Row row) {
        held.add(row);
        if (row.timeUs() * iters * 1e3 >= HOLD_UNDER_NANOS) {
            flush();
        }
    }

    /** Hands every held row to the sink, in order (at the end of the sweep). */
    void flush() {
        held.forEach(sink);
        held.clear();
    }
}
