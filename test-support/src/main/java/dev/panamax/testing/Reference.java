package dev.panamax.testing;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.MemorySegment;

/**
 * Independent reference values for the tests of collectives: inputs are small integers (so sums and
 * products are exact in every type), the expected result is computed in double (floating types)
 * or in long with the type's wrap-around (integers), and compared element by element.
 */
public final class Reference {
    private Reference() {
    }

    /** Input element i of rank r for op. Products use +-1, +-2 so that they stay exact in 16-bit floats. */
    public static long input(int rank, long i, DataType type, ReduceOp op) {
        long h = (rank * 31L + i * 7L + 3) % 11;
        if (op == ReduceOp.PROD) {
            long[] v = {1, 2, 1, -1, 1, 2, -2, 1, -1, 1, 2};
            long x = v[(int) h];
            return type == DataType.UINT8 ? Math.abs(x) : x;
        }
        return type == DataType.UINT8 ? h : h - 5;
    }

    /** Writes rank r's inputs for op into {@code count} elements of {@code s} from {@code offsetBytes}. */
    public static void fill(MemorySegment s, long offsetBytes, long count, int rank, DataType type, ReduceOp op) {
        for (long i = 0; i < count; i++) {
            type.setFromDouble(s, offsetBytes, i, input(rank, i, type, op));
        }
    }

    /** The expected reduction of element i over ranks 0..n-1, as double. */
    public static double expected(long i, int n, DataType type, ReduceOp op) {
        if (type.isFloatingPoint()) {
            double acc = input(0, i, type, op);
            for (int r = 1; r < n; r++) {
                double x = input(r, i, type, op);
                acc = switch (op) {
                    case SUM, AVG -> acc + x;
                    case PROD -> acc * x;
                    case MIN -> Math.min(acc, x);
                    case MAX -> Math.max(acc, x);
                };
            }
            return op == ReduceOp.AVG ? acc / n : acc;
        }
        long acc = input(0, i, type, op);
        for (int r = 1; r < n; r++) {
            long x = input(r, i, type, op);
            acc = switch (op) {
                case SUM, AVG -> acc + x;
                case PROD -> acc * x;
                case MIN -> Math.min(acc, x);
                case MAX -> Math.max(acc, x);
            };
        }
        acc = wrap(acc, type);
        if (op == ReduceOp.AVG) {
            acc = acc / n;
        }
        return acc;
    }

    /** {@code v} wrapped to the range of an integer type, as the type's two's complement arithmetic does. */
    public static long wrap(long v, DataType t) {
        return switch (t) {
            case INT8 -> (byte) v;
            case UINT8 -> v & 0xff;
            case INT32 -> (int) v;
            default -> v;
        };
    }

    /** Tolerance for floating results (relative, plus absolute near zero); 0 for integers. */
    public static double tolerance(DataType t) {
        return switch (t) {
            case FLOAT64 -> 1e-12;
            case FLOAT32 -> 1e-6;
            case FLOAT16 -> 2e-3;
            case BFLOAT16 -> 1e-2;
            default -> 0;
        };
    }

    /**
     * Checks {@code count} elements of {@code s} from {@code offsetBytes} against {@link #expected} for n ranks;
     * returns a message naming the first wrong element and how many are wrong, or null when all are right.
     *
     * @param what what the elements are, for the message (for example "rank 2 recv")
     */
    public static String check(MemorySegment s, long offsetBytes, long count, int n, DataType type, ReduceOp op,
                               String what) {
        long wrong = 0;
        String first = null;
        for (long i = 0; i < count; i++) {
            double want = expected(i, n, type, op);
            double got = type.getAsDouble(s, offsetBytes, i);
            boolean ok;
            if (type.isFloatingPoint()) {
                ok = Math.abs(got - want) <= tolerance(type) * Math.max(1, Math.abs(want));
            } else {
                ok = got == want;
            }
            if (!ok) {
                wrong++;
                if (first == null) {
                    first = what + ": element " + i + " is " + got + ", expected " + want;
                }
            }
        }
        return first == null ? null : first + " (" + wrong + " wrong of " + count + ")";
    }
}
