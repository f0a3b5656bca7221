package dev.panamax.bench.tools;

import dev.panamax.collectives.Collective;
import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.collectives.Topology;
import dev.panamax.memory.DataType;
import dev.panamax.memory.Half;
import dev.panamax.memory.ReduceOp;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The error of low-precision all-reduces against a float64 reference ({@code scripts/bench/wire-type-errors}):
 * float32 gradients summed over 2-8 in-JVM ranks (their arithmetic is that of every transport), by the ring,
 * recursive halving-doubling and BlueConnect (hosts of 2 ranks) in float32, in bfloat16 and in float16 (each rank
 * rounding its gradient first), and by the float32 all-reduce with bfloat16 or float16 on the wire. Prints a
 * Markdown table: per rank count and method, the mean error (sum of |result - exact| over sum of |exact|) and the
 * max error (largest |result - exact| over the sum of |inputs| of that element, the scale of a sum's rounding).
 *
 * <p>Options: {@code --ranks 2,3,4,5,6,7,8}, {@code --count 65536}, {@code --seed 1}. The gradients are normal
 * with a per-element scale spread over four orders of magnitude (as layers' gradients are).
 */
public final class WireTypeErrors {
    private static final String[] ALGORITHMS = {"ring", "rhd", "blueconnect"};

    private WireTypeErrors() {
    }

    /** Mean and max error of one method at one rank count. */
    record Error(double mean, double max) {
    }

    public static void main(String[] args) {
        int[] ranks = {2, 3, 4, 5, 6, 7, 8};
        int count = 65_536;
        long seed = 1;
        for (int i = 0; i < args.length; i += 2) {
            switch (args[i]) {
                case "--ranks" -> ranks = Arrays.stream(args[i + 1].split(",")).mapToInt(Integer::parseInt)
                        .toArray();
                case "--count" -> count = Integer.parseInt(args[i + 1]);
                case "--seed" -> seed = Long.parseLong(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + " (--ranks, --count, --seed)");
            }
        }
        System.out.printf(Locale.ROOT, "%d float32 elements a rank, seed %d; mean error / max error%n%n", count,
                seed);
        System.out.println("| ranks | method | float32 | bfloat16 | float16 |");
        System.out.println("|---|---|---|---|---|");
        for (int n : ranks) {
            float[][] inputs = inputs(n, count, seed);
            double[] exact = new double[count];
            double[] magnitude = new double[count];
            for (float[] x : inputs) {
                for (int i = 0; i < count; i++) {
                    exact[i] += x[i];
                    magnitude[i] += Math.abs(x[i]);
                }
            }
            for (String algorithm : ALGORITHMS) {
                List<String> cells = new ArrayList<>();
                for (DataType type : new DataType[] {DataType.FLOAT32, DataType.BFLOAT16, DataType.FLOAT16}) {
                    double[] got = allReduce(n, inputs, algorithm, type, null);
                    cells.add(got == null ? "n/a" : format(error(got, exact, magnitude)));
                }
                System.out.printf(Locale.ROOT, "| %d | %s | %s |%n", n, algorithm, String.join(" | ", cells));
            }
            String bf16 = format(error(allReduce(n, inputs, null, DataType.FLOAT32, DataType.BFLOAT16), exact,
                    magnitude));
            String fp16 = format(error(allReduce(n, inputs, null, DataType.FLOAT32, DataType.FLOAT16), exact,
                    magnitude));
            System.out.printf(Locale.ROOT, "| %d | float32 sums, 16-bit wire | | %s | %s |%n", n, bf16, fp16);
        }
    }

    /** Rank r's gradient: normal values times a scale from 1e-4 to 1 that varies along the vector. */
    static float[][] inputs(int n, int count, long seed) {
        float[][] x = new float[n][count];
        for (int r = 0; r < n; r++) {
            SplittableRandom random = new SplittableRandom(seed * 1_000_003L + r);
            for (int i = 0; i < count; i++) {
                double scale = Math.pow(10, -4.0 * ((i * 2654435761L) % 1000) / 1000);
                x[r][i] = (float) (random.nextGaussian() * scale);
            }
        }
        return x;
    }

    /**
     * The all-reduced sum on rank 0: in {@code type} with {@code algorithm} (each rank's input rounded to it), or
     * with {@code wire} set, as float32 on that wire; null when the algorithm does not run on {@code n} ranks.
     */
    static double[] allReduce(int n, float[][] inputs, String algorithm, DataType type, DataType wire) {
        int count = inputs[0].length;
        List<Communicator> comms = Panamax.local(n);
        AtomicReference<double[]> result = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (Communicator c : comms) {
            threads.add(Thread.ofPlatform().start(() -> {
                try (Arena arena = Arena.ofConfined()) {
                    if (algorithm != null) {
                        if (algorithm.equals("blueconnect")) {
                            c.setTopology(Topology.of(2, n / 2));
                        }
                        c.setAlgorithm(Collective.ALL_REDUCE, algorithm);
                    }
                    DataType data = wire == null ? type : DataType.FLOAT32;
                    MemorySegment buf = arena.allocate(count * data.byteSize(), 64);
                    float[] x = inputs[c.rank()];
                    for (int i = 0; i < count; i++) {
                        switch (data) {
                            case FLOAT32 -> buf.setAtIndex(ValueLayout.JAVA_FLOAT, i, x[i]);
                            case BFLOAT16 -> buf.setAtIndex(ValueLayout.JAVA_SHORT, i, Half.floatToBfloat16(x[i]));
                            default -> buf.setAtIndex(ValueLayout.JAVA_SHORT, i, Half.floatToFloat16(x[i]));
                        }
                    }
                    if (wire == null) {
                        c.allReduce(buf, count, data, ReduceOp.SUM);
                    } else {
                        c.allReduce(buf, buf, count, data, wire, ReduceOp.SUM);
                    }
                    if (c.rank() == 0) {
                        double[] got = new double[count];
                        for (int i = 0; i < count; i++) {
                            got[i] = switch (data) {
                                case FLOAT32 -> buf.getAtIndex(ValueLayout.JAVA_FLOAT, i);
                                case BFLOAT16 -> Half.bfloat16ToFloat(buf.getAtIndex(ValueLayout.JAVA_SHORT, i));
                                default -> Half.float16ToFloat(buf.getAtIndex(ValueLayout.JAVA_SHORT, i));
                            };
                        }
                        result.set(got);
                    }
                } catch (IllegalArgumentException e) {
                    failure.compareAndSet(null, e); // the algorithm does not run here
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                    c.abort();
                }
            }));
        }
        try {
            for (Thread t : threads) {
                t.join();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } finally {
            for (Communicator c : comms) {
                c.close();
            }
        }
        Throwable t = failure.get();
        if (t instanceof IllegalArgumentException) {
            return null;
        }
        if (t != null) {
            throw new IllegalStateException(t);
        }
        return result.get();
    }

    static Error error(double[] got, double[] exact, double[] magnitude) {
        double diff = 0;
        double norm = 0;
        double max = 0;
        for (int i = 0; i < got.length; i++) {
            double e = Math.abs(got[i] - exact[i]);
            diff += e;
            norm += Math.abs(exact[i]);
            max = Math.max(max, e / magnitude[i]);
        }
        return new Error(diff / norm, max);
    }

    private static String format(Error e) {
        return String.format(Locale.ROOT, "%.2e / %.2e", e.mean(), e.max());
    }
}
