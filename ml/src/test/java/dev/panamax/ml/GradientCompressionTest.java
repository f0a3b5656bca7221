package dev.panamax.ml;

import dev.panamax.memory.DataType;
import dev.panamax.memory.Half;
import dev.panamax.memory.ReduceOp;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The bucket hooks on their own: every rank gets the same bits, within bfloat16's error of the exact result. */
class GradientCompressionTest {
    private static final long[] COUNTS = {0, 1, 3, 13, 1000, 4099};

    /** Element j of rank r's bucket: of mixed sign and magnitude, not representable in bfloat16. */
    private static float input(int rank, long j) {
        return (float) ((new SplittableRandom(31L * rank + j).nextDouble() - 0.4) * Math.pow(2, j % 7 - 3));
    }

    /**
     * Each of {@code n} ranks all-reduces {@code count} float32 inputs with a fresh {@code hook}; every rank's
     * result, checked to be the same bits on every rank.
     */
    private static List<float[]> allReduced(int n, long count, ReduceOp op, Supplier<GradientCompression> hook) {
        List<float[]> results = LocalRanks.run(n, comm -> {
            try (Arena arena = Arena.ofShared(); GradientCompression h = hook.get()) {
                MemorySegment bucket = arena.allocate(Math.max(4, 4 * count), 64);
                for (long j = 0; j < count; j++) {
                    bucket.setAtIndex(ValueLayout.JAVA_FLOAT, j, input(comm.rank(), j));
                }
                h.allReduce(comm, bucket, count, DataType.FLOAT32, op);
                return bucket.asSlice(0, 4 * count).toArray(ValueLayout.JAVA_FLOAT);
            }
        });
        for (float[] r : results) {
            assertArrayEquals(results.getFirst(), r, "every rank gets the same bits");
        }
        return results;
    }

    @Test
    void bf16SumsAndAveragesWithinItsPrecisionAndAlikeOnEveryRank() {
        for (int n = 1; n <= 4; n++) {
            for (ReduceOp op : new ReduceOp[]{ReduceOp.SUM, ReduceOp.AVG}) {
                for (long count : COUNTS) {
                    int ranks = n;
                    List<float[]> results = allReduced(n, count, op, GradientCompression::bf16);
                    for (int j = 0; j < count; j++) {
                        double exact = 0;
                        double magnitude = 0;
                        for (int r = 0; r < ranks; r++) {
                            exact += input(r, j);
                            magnitude += Math.abs(input(r, j));
                        }
                        double divisor = op == ReduceOp.AVG ? ranks : 1;
                        // Each input and each partial sum rounds once to bfloat16 (relative error 2^-9).
                        double tolerance = ranks * Math.pow(2, -8) * magnitude / divisor;
                        float got = results.getFirst()[j];
                        double want = exact / divisor;
                        if (Math.abs(got - want) > tolerance) {
                            throw new AssertionError(ranks + " ranks " + op + " count " + count + " element " + j
                                    + ": " + got + ", exact " + want);
                        }
                    }
                }
            }
        }
    }

    @Test
    void bf16CarriesFloat64Buckets() {
        List<double[]> results = LocalRanks.run(3, comm -> {
            try (Arena arena = Arena.ofShared(); GradientCompression bf16 = GradientCompression.bf16()) {
                MemorySegment bucket = arena.allocate(8 * 1001, 64);
                for (long j = 0; j < 1001; j++) {
                    bucket.setAtIndex(ValueLayout.JAVA_DOUBLE, j, input(comm.rank(), j));
                }
                bf16.allReduce(comm, bucket, 1001, DataType.FLOAT64, ReduceOp.AVG);
                return bucket.toArray(ValueLayout.JAVA_DOUBLE);
            }
        });
        for (double[] r : results) {
            assertArrayEquals(results.getFirst(), r, "every rank gets the same bits");
        }
        for (int j = 0; j < 1001; j++) {
            double exact = 0;
            double magnitude = 0;
            for (int r = 0; r < 3; r++) {
                exact += input(r, j);
                magnitude += Math.abs(input(r, j));
            }
            double got = results.getFirst()[j];
            assertTrue(Math.abs(got - exact / 3) <= Math.pow(2, -8) * magnitude, j + ": " + got + " vs " + exact / 3);
        }
    }

    @Test
    void bf16RoundsWhatFloat32Keeps() {
        // 1 + 2^-10 is a float32 but not a bfloat16: alone on one rank it comes back as 1.
        List<Float> got = LocalRanks.run(1, comm -> {
            try (Arena arena = Arena.ofShared(); GradientCompression bf16 = GradientCompression.bf16()) {
                MemorySegment bucket = arena.allocate(4);
                bucket.set(ValueLayout.JAVA_FLOAT, 0, 1 + 0x1p-10f);
                bf16.allReduce(comm, bucket, 1, DataType.FLOAT32, ReduceOp.SUM);
                return bucket.get(ValueLayout.JAVA_FLOAT, 0);
            }
        });
        assertEquals(1f, got.getFirst());
    }

    @Test
    void bf16RefusesWhatItCannotCarry() {
        GradientCompression bf16 = GradientCompression.bf16();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> bf16.requireSupported(DataType.INT32));
        assertTrue(e.getMessage().contains("int32"), e.getMessage());
        LocalRanks.run(1, comm -> {
            try (Arena arena = Arena.ofShared()) {
                MemorySegment bucket = arena.allocate(8);
                IllegalArgumentException max = assertThrows(IllegalArgumentException.class,
                        () -> bf16.allReduce(comm, bucket, 2, DataType.FLOAT32, ReduceOp.MAX));
                assertTrue(max.getMessage().contains("MAX"), max.getMessage());
            }
            return null;
        });
        bf16.close();
    }

    @Test
    void noneIsThePlainAllReduce() {
        List<float[]> results = LocalRanks.run(3, comm -> {
            try (Arena arena = Arena.ofShared()) {
                MemorySegment bucket = arena.allocate(4 * 13, 64);
                for (int j = 0; j < 13; j++) {
                    bucket.setAtIndex(ValueLayout.JAVA_FLOAT, j, input(comm.rank(), j));
                }
                GradientCompression.none().allReduce(comm, bucket, 13, DataType.FLOAT32, ReduceOp.AVG);
                return bucket.toArray(ValueLayout.JAVA_FLOAT);
            }
        });
        for (int j = 0; j < 13; j++) {
            float sum = 0;
            for (int r = 0; r < 3; r++) {
                sum += input(r, j);
            }
            assertEquals(sum / 3, results.getFirst()[j], 1e-6f * Math.max(1, Math.abs(sum)));
        }
    }

    @Test
    void onWireSumsTheRoundedInputsWithOneMoreRounding() {
        for (int n = 1; n <= 4; n++) {
            for (ReduceOp op : new ReduceOp[]{ReduceOp.SUM, ReduceOp.AVG}) {
                for (long count : COUNTS) {
                    int ranks = n;
                    List<float[]> results = allReduced(n, count, op, () -> GradientCompression.onWire(
                            DataType.BFLOAT16));
                    double divisor = op == ReduceOp.AVG ? ranks : 1;
                    for (int j = 0; j < count; j++) {
                        double want = 0;
                        double magnitude = 0;
                        for (int r = 0; r < ranks; r++) {
                            double x = Half.bfloat16ToFloat(Half.floatToBfloat16(input(r, j)));
                            want += x;
                            magnitude += Math.abs(x);
                        }
                        want /= divisor;
                        // The result's own rounding to bfloat16, and the float32 sum's.
                        double tolerance = Math.pow(2, -8) * Math.abs(want) + ranks * Math.pow(2, -24) * magnitude;
                        float got = results.getFirst()[j];
                        assertTrue(Math.abs(got - want) <= tolerance, ranks + " ranks " + op + " count " + count
                                + " element " + j + ": " + got + ", reference " + want);
                    }
                }
            }
        }
        IllegalArgumentException wire = assertThrows(IllegalArgumentException.class,
                () -> GradientCompression.onWire(DataType.INT8));
        assertTrue(wire.getMessage().contains("int8"), wire.getMessage());
        IllegalArgumentException type = assertThrows(IllegalArgumentException.class,
                () -> GradientCompression.onWire(DataType.FLOAT16).requireSupported(DataType.INT32));
        assertTrue(type.getMessage().contains("float16-wire compression") && type.getMessage().contains("int32"),
                type.getMessage());
    }
}
