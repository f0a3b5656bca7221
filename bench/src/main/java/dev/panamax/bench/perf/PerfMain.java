package dev.panamax.bench.perf;

import picocli.CommandLine;

import java.io.PrintStream;
import java.io.PrintWriter;

/**
 * {@code panamax-perf}: nccl-tests style bandwidth and latency sweep of one collective.
 *
 * <pre>panamax-perf allreduce -np 4 -t shm -b 8 -e 64M -f 2 -n 20 -w 5 -c 1 -d float32 -o sum</pre>
 *
 * <p>{@code -a ring,rhd,...} sweeps once per algorithm; {@code --topology} sets the topology on
 * every rank; {@code --print-schedule} and {@code --explain} print what would run (without
 * running it); {@code --calibrate} measures the cost-model parameters; {@code --plot} draws the
 * results.
 *
 * With {@code -t local} the ranks are threads of this JVM. With {@code -t shm} or {@code -t tcp}
 * this process is rank 0 and starts ranks 1..np-1 as child JVMs; a process started with
 * {@code PANAMAX_RANK} in its environment (by those children, or by {@code scripts/panamax-run},
 * torchrun, mpirun) is one rank of such a job instead. Rank 0 prints the table; the other ranks'
 * output comes out prefixed with {@code [rank] }.
 *
 * <p>This class is the entry point (of {@code scripts/panamax-perf} and of the child ranks): the
 * options and their checks are {@link PerfCommand}, running the ranks {@link PerfLauncher}, the
 * table, chart and JSON output {@link PerfReport}.
 *
 * <p>Exit status: 0 when every check passed, 1 when some element was wrong, 2 for a bad command
 * line, 3 when the run failed (a rank died, a collective timed out).
 */
public final class PerfMain {
    static final int EXIT_WRONG = 1;
    static final int EXIT_USAGE = 2;
    static final int EXIT_FAILED = 3;

    private PerfMain() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** Runs the command; returns the exit status. */
    static int run(String[] args, PrintStream out, PrintStream err) {
        PerfCommand command = new PerfCommand(out, err);
        CommandLine cl = new CommandLine(command);
        cl.setOut(new PrintWriter(out, true));
        cl.setErr(new PrintWriter(err, true));
        cl.setExecutionExceptionHandler((e, line, parsed) -> {
            err.println("panamax-perf: " + describe(e));
            return EXIT_FAILED;
        });
        cl.setParameterExceptionHandler((e, a) -> {
            err.println("panamax-perf: " + e.getMessage());
            err.println("run 'panamax-perf --help' for the options");
            return EXIT_USAGE;
        });
        command.args = args;
        return cl.execute(args);
    }

    /** An exception as one line: its message, or what it is when it has none. */
    static String describe(Throwable e) {
        String m = e.getMessage();
        return (m == null || m.isBlank()) ? e.toString() : m;
    }
}
