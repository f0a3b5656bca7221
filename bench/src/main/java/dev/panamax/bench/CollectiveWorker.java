package dev.panamax.bench;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.TransportKind;
import dev.panamax.collectives.LaunchConfig;
import dev.panamax.collectives.Panamax;
import dev.panamax.bench.perf.PerfCollective;
import dev.panamax.bench.perf.RankProcesses;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.nio.file.Path;
import java.time.Duration;

/**
 * A helper rank process of {@link CollectiveBenchmark}: joins the job from its environment and runs
 * the same collective as rank 0, once per operation rank 0 issues through the counters file
 * ({@link LockstepCounters}).
 * Arguments: {@code COLLECTIVE TRANSPORT BYTES TYPE OP COUNTERS_FILE TIMEOUT_SECONDS}.
 */
public final class CollectiveWorker {
    private CollectiveWorker() {
    }

    public static void main(String[] args) {
        RankProcesses.exitWithParent();
        if (args.length != 7) {
            System.err.println("usage: CollectiveWorker COLLECTIVE TRANSPORT BYTES TYPE OP COUNTERS_FILE "
                    + "TIMEOUT_SECONDS");
            System.exit(2);
        }
        try (LockstepCounters lockstep = LockstepCounters.openFile(Path.of(args[5]));
             Communicator comm = Panamax.builder().config(LaunchConfig.fromEnvironment())
                     .transport(TransportKind.parse(args[1]))
                     .timeout(Duration.ofMillis((long) (Double.parseDouble(args[6]) * 1000)))
                     .connect()) {
            CollectiveSetup setup = new CollectiveSetup(comm, PerfCollective.parse(args[0]), Long.parseLong(args[2]),
                    DataType.parse(args[3]), ReduceOp.parse(args[4]));
            lockstep.follow(setup);
        } catch (RuntimeException e) {
            System.err.println("rank " + System.getenv("PANAMAX_RANK") + ": " + e);
            System.exit(3);
        }
        System.exit(0);
    }
}
