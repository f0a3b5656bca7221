package dev.panamax.bench.perf;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.LaunchConfig;
import dev.panamax.collectives.Panamax;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs a checked {@link PerfCommand}'s measurement, one of three ways, and hands rank 0's rows to
 * {@link PerfReport}:
 * <ul>
 * <li>{@code -t local}: every rank a thread of this JVM;</li>
 * <li>under a launcher ({@code PANAMAX_RANK} in the environment, or {@code --launched}): this process is one
 *     rank of the job;</li>
 * <li>otherwise ({@code -t shm|tcp|verbs|auto|gpu|nccl}): this process is rank 0 and starts ranks 1..np-1 as
 *     child JVMs ({@link RankProcesses}), which join through the environment; their output comes out
 *     prefixed with {@code [rank] }.</li>
 * </ul>
 * A rank records a flight recording around its run when {@code --jfr} asks. The return values are
 * {@link PerfMain}'s exit statuses.
 */
final class PerfLauncher {
    private final PerfCommand cmd;
    private final PerfReport report;
    private final PrintStream out;
    private final PrintStream err;
    /** The secret of the job this process launched itself (null: whatever the environment says). */
    private String jobSecret;

    PerfLauncher(PerfCommand cmd, PerfReport report) {
        this.cmd = cmd;
        this.report = report;
        this.out = cmd.out;
        this.err = cmd.err;
    }

    /** Measures; {@code joinEnvironment}: this process is one rank of a job described by the environment. */
    int run(boolean joinEnvironment) throws InterruptedException {
        if (cmd.backend != null) {
            // before any rank starts: without the libraries nothing can run (each rank checks again)
            String missing = DeviceTarget.missingLibraries(cmd.transport, cmd.backend);
            if (missing != null) {
                err.println("panamax-perf: " + missing);
                return PerfMain.EXIT_FAILED;
            }
        }
        if (cmd.transport.equals("local")) {
            if (joinEnvironment) {
                err.println("panamax-perf: -t local runs every rank in this JVM; it cannot join a launched job (use "
                        + "-t shm or -t tcp)");
                return PerfMain.EXIT_USAGE;
            }
            return runLocal();
        }
        if (joinEnvironment) {
            RankProcesses.exitWithParent();
            LaunchConfig lc = LaunchConfig.fromEnvironment();
            if (lc.worldSize() != cmd.ranks && cmd.isDefault("-np")) {
                // without -np the job's world size counts, for the header and the report too
                cmd.ranks = lc.worldSize();
            } else if (lc.worldSize() != cmd.ranks) {
                err.println("panamax-perf: -np " + cmd.ranks + " disagrees with the job's world size "
                        + lc.worldSize());
                return PerfMain.EXIT_USAGE;
            }
            return runRank(lc);
        }
        return launch();
    }

    // ---- the three ways to run --------------------------------------------------------------

    /** -t local: every rank a thread of this JVM. */
    private int runLocal() throws InterruptedException {
        JfrRecording recording = cmd.jfr == null ? null : JfrRecording.start(cmd.jfr, cmd.jfrStepThreshold);
        try {
            return runLocal0();
        } finally {
            if (recording != null) {
                recording.close();
                out.println("# jfr: " + recording.file());
                out.flush();
            }
        }
    }

    private int runLocal0() throws InterruptedException {
        int ranks = cmd.ranks;
        PerfConfig config = cmd.config();
        List<Communicator> comms = Panamax.local(ranks, cmd.timeoutNanos());
        if (!cmd.calibrate) {
            report.printHeader();
        }
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<List<Row>> results = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int r = 0; r < ranks; r++) {
            results.add(null);
            Communicator comm = comms.get(r);
            int rank = r;
            Thread t = new Thread(() -> {
                try {
                    if (cmd.calibrate) {
                        new Calibration(comm, config, rank == 0 ? out : null, err, cmd.waits).run(cmd.transport);
                    } else {
                        PerfRunner runner = new PerfRunner(comm, config, null, err);
                        results.set(rank, runner.run(rank == 0 ? report::printRow : null));
                    }
                } catch (Throwable e) {
                    if (failure.compareAndSet(null, e)) {
                        // Close every communicator so the other ranks fail now instead of at the timeout.
                        comms.forEach(Communicator::close);
                    }
                }
            }, "rank-" + r);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        comms.forEach(Communicator::close);
        if (failure.get() != null) {
            err.println("panamax-perf: " + PerfMain.describe(failure.get()));
            return PerfMain.EXIT_FAILED;
        }
        if (cmd.calibrate) {
            return 0;
        }
        return report.finish(results.get(0), new TreeSet<>(List.of(ranks > 1 ? "local" : "self")));
    }

    /** One rank of a job launched by someone else (or by {@link #launch}). */
    private int runRank(LaunchConfig lc) {
        JfrRecording recording;
        try {
            recording = cmd.jfr == null ? null : JfrRecording.start(JfrRecording.rankFile(cmd.jfr, lc.rank()),
                    cmd.jfrStepThreshold);
        } catch (IllegalArgumentException e) {
            err.println("panamax-perf: rank " + lc.rank() + ": " + e.getMessage());
            return PerfMain.EXIT_FAILED;
        }
        try {
            return runRank0(lc);
        } finally {
            if (recording != null) {
                recording.close();
                // Ranks other than 0 print on stderr (prefixed with their rank by rank 0), after the table.
                (lc.rank() == 0 ? out : err).println("# jfr: " + recording.file());
                (lc.rank() == 0 ? out : err).flush();
            }
        }
    }

    private int runRank0(LaunchConfig lc) {
        PerfConfig config = cmd.config();
        var builder = Panamax.builder().config(lc).transport(cmd.transportKind).timeout(cmd.timeout());
        if (jobSecret != null) {
            builder.secret(jobSecret);
        }
        try (Communicator comm = builder.connect()) {
            if (cmd.calibrate) {
                new Calibration(comm, config, comm.rank() == 0 ? out : null, err, cmd.waits).run(cmd.transport);
                return 0;
            }
            DeviceTarget device = cmd.backend == null ? null : DeviceTarget.open(comm, config, cmd.transport,
                    lc.localRank());
            if (comm.rank() == 0) {
                report.printHeader();
                if (device != null) {
                    out.println("# device memory: rank 0 on " + device.deviceName() + ", backend " + cmd.backend);
                    out.flush();
                }
            }
            // the runner closes the device target (collective) when the sweep ends
            List<Row> rows = new PerfRunner(comm, config, device, err).run(comm.rank() == 0 ? report::printRow : null);
            if (comm.rank() != 0) {
                return PerfReport.wrongTotal(rows) > 0 ? PerfMain.EXIT_WRONG : 0;
            }
            return report.finish(rows, PerfReport.links(comm));
        } catch (RuntimeException e) {
            String m = PerfMain.describe(e);
            err.println("panamax-perf: " + (m.startsWith("rank ") ? m : "rank " + lc.rank() + ": " + m));
            return PerfMain.EXIT_FAILED;
        }
    }

    /**
     * -t shm|tcp|auto without a launcher: this process is rank 0 and starts the others. The store
     * listens on PANAMAX_MASTER_ADDR when that is set (an address of this process's network
     * namespace), else on 127.0.0.1.
     */
    private int launch() throws InterruptedException {
        int ranks = cmd.ranks;
        String master = System.getenv("PANAMAX_MASTER_ADDR");
        String addr = master == null || master.isBlank() ? "127.0.0.1" : master.trim();
        int port = RankProcesses.freePort(addr);
        List<String> command = RankProcesses.javaCommand(PerfMain.class.getName(), null);
        command.addAll(Arrays.asList(cmd.args));
        command.add("--launched");
        jobSecret = RankProcesses.jobSecret();
        Map<String, String> env = Map.of("PANAMAX_TIMEOUT_SECONDS", PerfReport.fmt(cmd.timeoutSeconds),
                "PANAMAX_SECRET", jobSecret);
        RankProcesses children = RankProcesses.start(ranks, addr, port, command, env, err, (rank, status) -> {
            err.println("panamax-perf: rank " + rank + " exited with status " + status + "; stopping the job");
            err.flush();
            // Rank 0 normally notices the dead peer itself and exits with its own message; this is the backstop.
            Thread stopper = new Thread(() -> {
                try {
                    Thread.sleep(5_000);
                } catch (InterruptedException ignored) {
                    return;
                }
                err.println("panamax-perf: rank 0 did not stop by itself after rank " + rank + " failed; exiting");
                err.flush();
                Runtime.getRuntime().halt(PerfMain.EXIT_FAILED);
            }, "panamax-stopper");
            stopper.setDaemon(true);
            stopper.start();
        });
        int status;
        try {
            status = runRank(new LaunchConfig(0, ranks, 0, addr, port));
            if (status == PerfMain.EXIT_FAILED) {
                return status;
            }
            int others = children.waitFor(30_000);
            if (others != 0 && status == 0) {
                err.println("panamax-perf: " + (others < 0 ? "some rank did not exit" : "a rank exited with status "
                        + others));
                status = others < 0 ? PerfMain.EXIT_FAILED : others;
            }
        } finally {
            children.close();
        }
        return status;
    }
}
