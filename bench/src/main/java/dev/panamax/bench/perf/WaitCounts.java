package dev.panamax.bench.perf;

import java.lang.management.ManagementFactory;
import java.util.Comparator;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/**
 * How a rank's waits idled, read from its communicator's JMX bean ({@code dev.panamax:type=Communicator}):
 * totals so far, subtracted around the timed iterations to give {@code --waits}' per-call columns.
 *
 * @param waits           waits that had to idle
 * @param servedSpinning  of those, the waits that ended while spinning
 * @param spins           idles spent spinning
 * @param yields          idles spent yielding the CPU
 * @param parks           idles spent parking
 * @param sleeps          idles spent asleep on the shared-memory doorbell
 * @param spinNanos how long the latest wait could spin
 * @param cpuMoves  moves off a CPU shared with the peer waited for
 * @param preemptedSpins spins during which the thread was switched off its CPU (each began a penalty)
 */
record WaitCounts(long waits, long servedSpinning, long spins, long yields, long parks, long sleeps,
                  long spinNanos, long cpuMoves, long preemptedSpins) {
    private static final MBeanServer SERVER = ManagementFactory.getPlatformMBeanServer();

    /**
     * The bean of rank {@code rank}'s measured communicator: the one created first on that rank (lowest id),
     * before the statistics' split; null when JMX is off.
     */
    static ObjectName beanOf(int rank) {
        try {
            return SERVER.queryNames(new ObjectName("dev.panamax:type=Communicator,rank=" + rank + ",*"), null)
                    .stream().min(Comparator.comparingLong(n -> Long.parseLong(n.getKeyProperty("id"))))
                    .orElse(null);
        } catch (JMException e) {
            return null;
        }
    }

    /** The totals now; null when {@code bean} is null or gone. */
    static WaitCounts read(ObjectName bean) {
        if (bean == null) {
            return null;
        }
        try {
            return new WaitCounts(get(bean, "IdleWaits"), get(bean, "WaitsServedSpinning"), get(bean, "Spins"),
                    get(bean, "Yields"), get(bean, "Parks"), get(bean, "Sleeps"), get(bean, "SpinNanos"),
                    get(bean, "CpuMoves"), get(bean, "PreemptedSpins"));
        } catch (JMException e) {
            return null;
        }
    }

    private static long get(ObjectName bean, String attribute) throws JMException {
        return ((Number) SERVER.getAttribute(bean, attribute)).longValue();
    }

    /**
     * Per call from {@code before} to this: waits that idled, the share of them served while spinning,
     * spins, yields, parks, sleeps, the latest spin in microseconds, the CPU moves in all (not per call), and the
     * preempted spins per call.
     */
    double[] perCallSince(WaitCounts before, long calls) {
        double n = Math.max(1, calls);
        long w = waits - before.waits;
        return new double[] {w / n, w == 0 ? 1 : (servedSpinning - before.servedSpinning) / (double) w,
            (spins - before.spins) / n, (yields - before.yields) / n, (parks - before.parks) / n,
            (sleeps - before.sleeps) / n, spinNanos / 1e3, cpuMoves - before.cpuMoves,
            (preemptedSpins - before.preemptedSpins) / n};
    }
}
