package dev.panamax.bench.perf;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Known inputs and expected outputs for the check iteration ({@code -c 1}). Every input is a small
 * integer that depends on the rank and the element index, so that sums, products, minima and
 * maxima are exact in every data type (float16 and bfloat16 included): values 1..5 for sum and
 * average, 1..100 for min, max and the data-moving collectives, and for product a 2 at exactly one
 * rank per element and 1 elsewhere. Integer results are compared exactly; floating-point ones
 * within a few units in the last place of the type (average divides).
 */
public final class CheckData {
    private final PerfCollective collective;
    private final DataType type;
    private final DataType wire;
    private final ReduceOp op;
    private final int ranks;
    private final int root;
    private final MemorySegment scratch = Arena.ofAuto().allocate(8, 8);

    public CheckData(PerfCollective collective, DataType type, ReduceOp op, int ranks, int root) {
        this(collective, type, op, ranks, root, null);
    }

    /** As the other constructor; results travelled as {@code wireType} (null: as the type), so they are that exact. */
    public CheckData(PerfCollective collective, DataType type, ReduceOp op, int ranks, int root, DataType wireType) {
        this.wire = wireType;
        this.collective = collective;
        this.type = type;
        this.op = collective.reduces() ? op : null;
        this.ranks = ranks;
        this.root = root;
    }

    /** The input of {@code rank} at element {@code index} of its send buffer. */
    public double input(int rank, long index) {
        long h = mix(index * 0x9E3779B97F4A7C15L + 0x632BE59BD9B4E019L);
        if (op == ReduceOp.PROD) {
            return Math.floorMod(h, ranks) == rank ? 2 : 1;
        }
        long g = mix(h ^ (rank * 0xC2B2AE3D27D4EB4FL + 1));
        int range = (op == ReduceOp.SUM || op == ReduceOp.AVG) ? 5 : 100;
        return 1 + Math.floorMod(g, range);
    }

    /** Fills the first {@code elements} elements of {@code send} with this rank's inputs. */
    public void fill(MemorySegment send, int rank, long elements) {
        for (long i = 0; i < elements; i++) {
            type.setFromDouble(send, 0, i, input(rank, i));
        }
    }

    /** The exact expected value of element {@code i} of the receive buffer of {@code rank}, before rounding to the
     * type. */
    public double expected(int rank, long count, long i) {
        return switch (collective) {
            case ALLREDUCE, REDUCE -> reduceOver(i);
            case REDUCESCATTER -> reduceOver((long) rank * count + i);
            case ALLGATHER -> input((int) (i / count), i % count);
            case BROADCAST -> input(root, i);
        };
    }

    private double reduceOver(long index) {
        double acc = input(0, index);
        for (int q = 1; q < ranks; q++) {
            double v = input(q, index);
            acc = switch (op) {
                case SUM, AVG -> acc + v;
                case PROD -> acc * v;
                case MIN -> Math.min(acc, v);
                case MAX -> Math.max(acc, v);
            };
        }
        return op == ReduceOp.AVG ? acc / ranks : acc;
    }

    /** Elements of the receive buffer of {@code rank} that differ from the expected result (0 for a reduce's non-root
     * ranks). */
    public long countWrong(MemorySegment recv, int rank, long count) {
        if (collective == PerfCollective.REDUCE && rank != root) {
            return 0;
        }
        long elements = collective == PerfCollective.ALLGATHER ? count * ranks : count;
        double tolerance = tolerance(wire != null ? wire : type);
        long wrong = 0;
        for (long i = 0; i < elements; i++) {
            double want = representable(expected(rank, count, i));
            double got = type.getAsDouble(recv, 0, i);
            if (tolerance == 0 ? got != want : !(Math.abs(got - want) <= tolerance * Math.max(1, Math.abs(want)))) {
                wrong++;
            }
        }
        return wrong;
    }

    /** Relative tolerance: 0 (exact) for integers, a few ulps of the type for floating point. */
    static double tolerance(DataType type) {
        return switch (type) {
            case FLOAT64 -> 1e-12;
            case FLOAT32 -> 1e-6;
            case FLOAT16 -> 2e-3;
            case BFLOAT16 -> 1.6e-2;
            default -> 0;
        };
    }

    /** {@code value} stored into the type and read back: integers wrap and truncate, floats round. */
    private double representable(double value) {
        type.setFromDouble(scratch, 0, 0, value);
        return type.getAsDouble(scratch, 0, 0);
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
