package dev.panamax.bench.perf;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.util.List;
import java.util.Locale;

/**
 * What one measurement runs, after the command line has been checked.
 *
 * @param collective  the collective
 * @param type        element type
 * @param op          reduction operator (ignored by the data-moving collectives)
 * @param root        root rank of broadcast and reduce
 * @param sizes       requested sizes in bytes, in order
 * @param iters       timed iterations per size
 * @param warmup      warm-up iterations per size
 * @param check       whether to run and verify a check iteration per size
 * @param userBuffers plain {@code Arena} buffers instead of {@code Communicator.allocate}
 * @param jitWarmup   iterations per size, cycling over the small sizes before the sweep, so that the JIT has compiled
 * the collective's code
 * @param algorithms  the algorithms to sweep, one after the other ({@code auto}: the planner's choice per size)
 * @param topology    the {@code --topology} spec every rank sets, or null for the communicator's own
 * @param wireType    the all-reduce's wire type ({@code --wire}), or null for the data type
 * @param preMulSum   {@code -o premulsum}: the all-reduce is {@code allReducePreMulSum} with scalar 1/ranks (an
 *                    average; {@code op} is AVG for the check)
 * @param straggleNanos {@code --straggle}: how late the last rank comes to every measured call (it sleeps this
 *                    long before the call), 0 for never
 * @param jitQuietMaxNanos {@code --jit-quiet-max}: the longest wait, after each JIT warm-up, for every rank's JIT to
 *                    go quiet
 */
public record PerfConfig(PerfCollective collective, DataType type, ReduceOp op, int root, List<Long> sizes, int iters,
        int warmup,
                         boolean check, boolean userBuffers, int jitWarmup, List<String> algorithms, String topology,
                         DataType wireType, boolean preMulSum, long straggleNanos,
                         long jitQuietMaxNanos) {

    public PerfConfig {
        sizes = List.copyOf(sizes);
        algorithms = List.copyOf(algorithms);
        if (algorithms.isEmpty()) {
            throw new IllegalArgumentException("no algorithm to run");
        }
    }

    /** The type column: the data type, and the wire type after a slash when it differs ({@code float32/bfloat16}). */
    public String typeName() {
        return type.canonicalName() + (wireType == null ? "" : "/" + wireType.canonicalName());
    }

    /** The operator column: the operator's name, or {@code none} for broadcast and all-gather. */
    public String redopName() {
        return !collective.reduces() ? "none" : preMulSum ? "premulsum" : op.name().toLowerCase(Locale.ROOT);
    }

    /** The largest send and receive buffers the sweep needs, in bytes, for {@code ranks} ranks. */
    public long[] maxBufferBytes(int ranks) {
        long send = 0;
        long recv = 0;
        int ts = type.byteSize();
        for (long s : sizes) {
            long count = collective.count(s, ts, ranks);
            send = Math.max(send, collective.sendBytes(count, ts, ranks));
            recv = Math.max(recv, collective.recvBytes(count, ts, ranks));
        }
        return new long[] {send, recv};
    }
}
