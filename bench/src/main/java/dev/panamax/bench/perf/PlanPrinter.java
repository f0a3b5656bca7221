package dev.panamax.bench.perf;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.collectives.Topology;
import dev.panamax.collectives.plan.Candidate;
import dev.panamax.collectives.plan.Planner;
import dev.panamax.collectives.schedule.Problem;

import java.io.PrintStream;
import java.util.List;
import java.util.Locale;

/**
 * {@code --print-schedule} and {@code --explain}: what the ranks would run, without running it.
 * Both ask in-JVM communicators of {@code -np} ranks (nothing is sent), configured like the ranks
 * of a measurement: the {@code --topology} given, or the communicator's own (flat) one.
 */
final class PlanPrinter {
    private PlanPrinter() {
    }

    /**
     * Prints the schedule that {@code rank} builds for each algorithm of the configuration, at the
     * first size of the sweep or at every size. Returns false when some algorithm cannot run some
     * size (the reason is printed in its place).
     */
    static boolean printSchedules(PerfConfig config, int ranks, int rank, boolean allSizes, long timeoutNanos,
            PrintStream out) {
        List<Communicator> comms = Panamax.local(ranks, timeoutNanos);
        try {
            Communicator comm = configure(comms.get(rank), config);
            PerfCollective c = config.collective();
            int ts = config.type().byteSize();
            List<Long> sizes = allSizes ? config.sizes() : config.sizes().subList(0, 1);
            out.printf(Locale.ROOT, "# schedules of rank %d of %d, %s, type %s, topology %s%n", rank, ranks,
                    c.cliName(),
                    config.type().canonicalName(), comm.topology());
            boolean ok = true;
            for (String alg : config.algorithms()) {
                comm.setAlgorithm(c.api(), alg);
                for (long requested : sizes) {
                    long count = c.count(requested, ts, ranks);
                    out.printf(Locale.ROOT, "#%n# -a %s, size %d B (count %d)%n", alg, c.sizeBytes(count, ts, ranks),
                            count);
                    try {
                        out.print(Planner.scheduleFor(comm, c.api(), count, config.type(), config.root()));
                    } catch (IllegalArgumentException e) {
                        out.println("# not available: " + e.getMessage());
                        ok = false;
                    }
                }
            }
            out.flush();
            return ok;
        } finally {
            comms.forEach(Communicator::close);
        }
    }

    /** Prints, for every size of the sweep, what the planner makes of rank 0's problem. */
    static void explain(PerfConfig config, int ranks, long timeoutNanos, PrintStream out) {
        List<Communicator> comms = Panamax.local(ranks, timeoutNanos);
        try {
            Topology topology = configure(comms.get(0), config).topology();
            PerfCollective c = config.collective();
            int ts = config.type().byteSize();
            out.printf(Locale.ROOT, "# planner: %s, np %d, type %s, topology %s%n", c.cliName(), ranks,
                    config.type().canonicalName(), topology);
            for (long requested : config.sizes()) {
                long count = c.count(requested, ts, ranks);
                Problem p = new Problem(c.api(), 0, ranks, count, ts, c.rooted() ? config.root() : 0, topology);
                out.printf(Locale.ROOT, "#%n# size %d B (count %d)%n", c.sizeBytes(count, ts, ranks), count);
                String text = explain(p);
                out.print(text.endsWith("\n") ? text : text + System.lineSeparator());
            }
            out.flush();
        } finally {
            comms.forEach(Communicator::close);
        }
    }

    /** The planner's account of {@code p} (to become {@code Planner.explain(p)}, the candidates table). */
    static String explain(Problem p) {
        return Planner.explain(p);
    }

    /** One line for a candidate: algorithm, topology, predicted time and the formula behind it. */
    static String describe(Candidate c) {
        String predicted = Double.isNaN(c.predictedSeconds()) ? "no prediction"
                : String.format(Locale.ROOT, "predicted %.2f us", c.predictedSeconds() * 1e6);
        return String.format(Locale.ROOT, "  choice: %s on %s, %s (%s)", c.algorithm(), c.topology(), predicted,
                c.formula());
    }

    private static Communicator configure(Communicator comm, PerfConfig config) {
        if (config.topology() != null) {
            comm.setTopology(Topology.parse(config.topology()));
        }
        return comm;
    }
}
