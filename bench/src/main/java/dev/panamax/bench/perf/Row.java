package dev.panamax.bench.perf;

import java.util.Locale;

/**
 * One line of the result table: one size. Times are the maximum over the ranks (the average time
 * per iteration of the slowest rank, like nccl-tests), bandwidths in GB/s (1e9 bytes per second).
 *
 * @param size      the {@code size} column in bytes (the larger of the send and receive buffers)
 * @param count     the element count passed to the collective (per rank for reduce-scatter and all-gather)
 * @param type      the data type's canonical name
 * @param redop     the reduction operator, or {@code none}
 * @param root      the root rank, or -1 for collectives without one
 * @param timeUs    average time per iteration in microseconds
 * @param algBw     size / time in GB/s
 * @param busBw     algBw times the collective's bus-bandwidth factor
 * @param wrong     elements that differ from the expected result, summed over the ranks; -1 when not checked
 * @param minUs     fastest iteration (maximum over the ranks of each rank's fastest)
 * @param p50Us     median iteration time
 * @param p99Us     99th percentile iteration time
 * @param maxUs     slowest iteration
 * @param algorithm the algorithm asked for ({@code -a}: {@code ring}, ..., or {@code auto})
 * @param schedule  the algorithm the schedule actually ran, with its details ({@code Schedule.algorithm()}:
 *                  {@code blueconnect(2x2: ring,ring)}; for {@code auto} the planner's choice at this size)
 * @param predictedUs the cost model's prediction for this algorithm, size and topology in
 *                  microseconds ({@code CostModel.predict}), or null where there is no model
 * @param waits     how the waits idled per call (maximum over the ranks), or null where unknown
 */
public record Row(long size, long count, String type, String redop, int root, double timeUs, double algBw, double busBw,
                  long wrong, double minUs, double p50Us, double p99Us, double maxUs, String algorithm, String schedule,
                  Double predictedUs, Waits waits) {

    /**
     * How the timed calls' waits idled, per call, maximum over the ranks (the communicators' JMX counts).
     *
     * @param idlePerCall      waits per call that found a request pending and had to idle
     * @param servedSpinning   the share of those waits that ended while spinning (the rest yielded or parked)
     * @param spinsPerCall     spin rounds per call
     * @param yieldsPerCall    yields of the CPU per call
     * @param parksPerCall     20 us parks per call
     * @param sleepsPerCall    sleeps on the shared-memory doorbell per call (until a peer's write woke the rank)
     * @param spinUs     how long the latest wait could spin (0 while the CPUs were contended)
     * @param cpuUsPerCall     the calling thread's CPU time per call, in microseconds
     * @param cpuMoves         moves off a CPU shared with the same-host peer waited for, during the timed calls
     */
    public record Waits(double idlePerCall, double servedSpinning, double spinsPerCall, double yieldsPerCall,
                        double parksPerCall, double sleepsPerCall, double spinUs, double cpuUsPerCall,
                        double cpuMoves) {
    }

    /** The widths of the {@code --waits} columns, for the header lines and a row without counts. */
    private static final String WAITS_COLUMNS = " %7s %6s %8s %8s %7s %7s %7s %9s %6s";

    /** Builds a row from the measured time, computing the bandwidths. */
    public static Row of(PerfCollective c, long count, int typeSize, String type, String redop, int root, int ranks,
                         double timeUs, long wrong, double minUs, double p50Us, double p99Us, double maxUs) {
        long size = c.sizeBytes(count, typeSize, ranks);
        double algBw = algBw(size, timeUs);
        return new Row(size, count, type, redop, root, timeUs, algBw, algBw * c.busBwFactor(ranks), wrong, minUs, p50Us,
                p99Us, maxUs,
                "", "", null, null);
    }

    /** This row labelled with the algorithm asked for and the one its schedule ran. */
    public Row withAlgorithm(String algorithm, String schedule) {
        return new Row(size, count, type, redop, root, timeUs, algBw, busBw, wrong, minUs, p50Us, p99Us, maxUs,
                algorithm, schedule,
                predictedUs, waits);
    }

    /** This row with the cost model's prediction. */
    public Row withPrediction(Double predictedUs) {
        return new Row(size, count, type, redop, root, timeUs, algBw, busBw, wrong, minUs, p50Us, p99Us, maxUs,
                algorithm, schedule,
                predictedUs, waits);
    }

    /** This row with its waits' idle counts. */
    public Row withWaits(Waits waits) {
        return new Row(size, count, type, redop, root, timeUs, algBw, busBw, wrong, minUs, p50Us, p99Us, maxUs,
                algorithm, schedule, predictedUs, waits);
    }

    /**
     * The {@code algorithm} column, without spaces: the schedule's algorithm ({@code ring},
     * {@code blueconnect(2x2:ring,ring)}), prefixed with {@code auto:} when the planner chose it.
     */
    public String algorithmColumn() {
        String shown = schedule == null || schedule.isEmpty() ? algorithm : schedule;
        if ("auto".equals(algorithm) && schedule != null && !schedule.isEmpty()) {
            shown = "auto:" + schedule;
        }
        return shown == null ? "" : shown.replace(" ", "");
    }

    /** GB/s (1e9 bytes per second) for {@code bytes} in {@code timeUs} microseconds; 0 for a zero time. */
    public static double algBw(long bytes, double timeUs) {
        return timeUs > 0 ? bytes / (timeUs * 1e3) : 0;
    }

    /** The column header lines (two), with or without the percentile columns; the algorithm column comes last. */
    public static String header(boolean percentiles) {
        return header(percentiles, false);
    }

    /** The column header lines, with or without the percentile and the {@code --waits} columns. */
    public static String header(boolean percentiles, boolean waits) {
        String names = String.format(Locale.ROOT, "#%11s %13s %9s %7s %10s %8s %8s %7s", "size", "count", "type",
                "redop", "time", "algbw", "busbw", "#wrong");
        String units = String.format(Locale.ROOT, "#%11s %13s %9s %7s %10s %8s %8s %7s", "(B)", "(elements)", "", "",
                "(us)", "(GB/s)", "(GB/s)", "");
        if (percentiles) {
            names += String.format(Locale.ROOT, " %10s %10s %10s", "p50", "p99", "max");
            units += String.format(Locale.ROOT, " %10s %10s %10s", "(us)", "(us)", "(us)");
        }
        if (waits) {
            names += String.format(Locale.ROOT, WAITS_COLUMNS, "idle", "spun", "spins", "yields", "parks", "sleeps",
                    "spin", "cpu", "moves");
            units += String.format(Locale.ROOT, WAITS_COLUMNS, "(/call)", "(%)", "(/call)", "(/call)", "(/call)",
                    "(/call)", "(us)", "(us/call)", "");
        }
        names += "  algorithm";
        return names + System.lineSeparator() + units;
    }

    /** The row as a table line aligned with {@link #header}. */
    public String format(boolean percentiles) {
        return format(percentiles, false);
    }

    /** The row as a table line aligned with {@link #header(boolean, boolean)}. */
    public String format(boolean percentiles, boolean withWaits) {
        String line = String.format(Locale.ROOT, "%12d %13d %9s %7s %10s %8.2f %8.2f %7s", size, count, type, redop,
                time(timeUs),
                algBw, busBw, wrong < 0 ? "N/A" : Long.toString(wrong));
        if (percentiles) {
            line += String.format(Locale.ROOT, " %10s %10s %10s", time(p50Us), time(p99Us), time(maxUs));
        }
        if (withWaits) {
            line += waits == null
                    ? String.format(Locale.ROOT, WAITS_COLUMNS, "-", "-", "-", "-", "-", "-", "-", "-", "-")
                    : String.format(Locale.ROOT, " %7.2f %6.1f %8.1f %8.2f %7.2f %7.2f %7.1f %9.1f %6.0f",
                    waits.idlePerCall, 100 * waits.servedSpinning, waits.spinsPerCall, waits.yieldsPerCall,
                    waits.parksPerCall, waits.sleepsPerCall, waits.spinUs, waits.cpuUsPerCall, waits.cpuMoves);
        }
        return line + "  " + algorithmColumn();
    }

    private static String time(double us) {
        return us >= 1e7 ? String.format(Locale.ROOT, "%.4g", us) : String.format(Locale.ROOT, "%.2f", us);
    }
}
