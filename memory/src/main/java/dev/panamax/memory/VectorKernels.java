package dev.panamax.memory;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * The reduction kernels on the Vector API (incubator module {@code jdk.incubator.vector}), used
 * only when that module is in the boot layer ({@link Reductions#isVectorized()}). Each kernel
 * handles the largest multiple of the preferred vector size and returns how many bytes it did;
 * {@link ScalarKernels} finishes the tail. Vector loads and stores are unaligned, so any byte
 * offset works. Results are bit-identical to the scalar kernels except for NaN payloads.
 * float16 has no vector path: the API has no half-precision conversion in this JDK, and doing it
 * with integer vector ops makes the loop too large for C2 to inline (see docs/design/kernels.md).
 */
final class VectorKernels {
    private static final ByteOrder NATIVE = ByteOrder.nativeOrder();
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Double> D = DoubleVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Long> L = LongVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Byte> B = ByteVector.SPECIES_PREFERRED;

    private VectorKernels() {
    }

    /** True when the preferred vectors are real SIMD registers (128 bits or more). */
    /** The length of one vector in bytes: reductions shorter than this are all tail. */
    static long vectorBytes() {
        return F.vectorByteSize();
    }

    static boolean usable() {
        return F.vectorBitSize() >= 128;
    }

    /**
     * {@code d = x op y} on a prefix of {@code bytes} from the given offsets (no slices: a slice is an object, three
     * per call of a small reduction); returns the bytes done (a multiple of the element size).
     */
    static long reduce(DataType type, ReduceOp op, MemorySegment d, long dOff, MemorySegment x, long xOff,
            MemorySegment y, long yOff, long bytes) {
        // One small method per type and op: each is compiled on its own, so a program that mixes
        // types and ops does not keep deoptimizing one large kernel method.
        return switch (type) {
            case FLOAT32 -> switch (op) {
                case SUM -> f32Sum(d, dOff, x, xOff, y, yOff, bytes);
                case PROD -> f32Prod(d, dOff, x, xOff, y, yOff, bytes);
                case MIN -> f32Min(d, dOff, x, xOff, y, yOff, bytes);
                case MAX -> f32Max(d, dOff, x, xOff, y, yOff, bytes);
                default -> throw new AssertionError(op);
            };
            case FLOAT64 -> switch (op) {
                case SUM -> f64Sum(d, dOff, x, xOff, y, yOff, bytes);
                case PROD -> f64Prod(d, dOff, x, xOff, y, yOff, bytes);
                case MIN -> f64Min(d, dOff, x, xOff, y, yOff, bytes);
                case MAX -> f64Max(d, dOff, x, xOff, y, yOff, bytes);
                default -> throw new AssertionError(op);
            };
            case INT32 -> switch (op) {
                case SUM -> i32Sum(d, dOff, x, xOff, y, yOff, bytes);
                case PROD -> i32Prod(d, dOff, x, xOff, y, yOff, bytes);
                case MIN -> i32Min(d, dOff, x, xOff, y, yOff, bytes);
                case MAX -> i32Max(d, dOff, x, xOff, y, yOff, bytes);
                default -> throw new AssertionError(op);
            };
            case INT64 -> switch (op) {
                case SUM -> i64Sum(d, dOff, x, xOff, y, yOff, bytes);
                case PROD -> i64Prod(d, dOff, x, xOff, y, yOff, bytes);
                case MIN -> i64Min(d, dOff, x, xOff, y, yOff, bytes);
                case MAX -> i64Max(d, dOff, x, xOff, y, yOff, bytes);
                default -> throw new AssertionError(op);
            };
            case INT8 -> switch (op) {
                case SUM -> i8Sum(d, dOff, x, xOff, y, yOff, bytes);
                case PROD -> i8Prod(d, dOff, x, xOff, y, yOff, bytes);
                case MIN -> i8Min(d, dOff, x, xOff, y, yOff, bytes);
                case MAX -> i8Max(d, dOff, x, xOff, y, yOff, bytes);
                default -> throw new AssertionError(op);
            };
            case UINT8 -> switch (op) {
                case SUM -> i8Sum(d, dOff, x, xOff, y, yOff, bytes);
                case PROD -> i8Prod(d, dOff, x, xOff, y, yOff, bytes);
                case MIN -> u8Min(d, dOff, x, xOff, y, yOff, bytes);
                case MAX -> u8Max(d, dOff, x, xOff, y, yOff, bytes);
                default -> throw new AssertionError(op);
            };
            case BFLOAT16 -> switch (op) {
                case SUM -> bf16Sum(d, dOff, x, xOff, y, yOff, bytes);
                case PROD -> bf16Prod(d, dOff, x, xOff, y, yOff, bytes);
                case MIN -> bf16Min(d, dOff, x, xOff, y, yOff, bytes);
                case MAX -> bf16Max(d, dOff, x, xOff, y, yOff, bytes);
                default -> throw new AssertionError(op);
            };
            case FLOAT16 -> 0;
        };
    }

    /** {@code s /= divisor} on a prefix of {@code bytes} from byte offset {@code off} for FLOAT32 and FLOAT64;
     * returns the bytes done. */
    static long divide(DataType type, MemorySegment s, long off, long bytes, int divisor) {
        switch (type) {
            case FLOAT32 -> {
                long step = F.vectorByteSize();
                long end = bytes - bytes % step;
                float div = divisor;
                for (long o = 0; o < end; o += step) {
                    FloatVector.fromMemorySegment(F, s, off + o, NATIVE).div(div).intoMemorySegment(s, off + o, NATIVE);
                }
                return end;
            }
            case FLOAT64 -> {
                long step = D.vectorByteSize();
                long end = bytes - bytes % step;
                double div = divisor;
                for (long o = 0; o < end; o += step) {
                    DoubleVector.fromMemorySegment(D, s, off + o, NATIVE).div(div)
                            .intoMemorySegment(s, off + o, NATIVE);
                }
                return end;
            }
            default -> {
                return 0;
            }
        }
    }

    /** {@code d = scalar * x} on a prefix of {@code bytes} from the given byte offsets (float32 and float64); returns
     * the bytes done. */
    static long scale(DataType type, MemorySegment d, long dOff, MemorySegment x, long xOff, long bytes,
            double scalar) {
        switch (type) {
            case FLOAT32 -> {
                long step = F.vectorByteSize();
                long end = bytes - bytes % step;
                float factor = (float) scalar;
                for (long o = 0; o < end; o += step) {
                    FloatVector.fromMemorySegment(F, x, xOff + o, NATIVE).mul(factor)
                            .intoMemorySegment(d, dOff + o, NATIVE);
                }
                return end;
            }
            case FLOAT64 -> {
                long step = D.vectorByteSize();
                long end = bytes - bytes % step;
                for (long o = 0; o < end; o += step) {
                    DoubleVector.fromMemorySegment(D, x, xOff + o, NATIVE).mul(scalar)
                            .intoMemorySegment(d, dOff + o, NATIVE);
                }
                return end;
            }
            default -> {
                return 0;
            }
        }
    }

    /**
     * {@code d = a * x + b * y} for float32, float64 and bfloat16 (each product rounded to the type, then the sum: no
     * fused multiply-add), over whole vectors from the given offsets; returns the bytes done (0 for float16).
     */
    static long scaledSum(DataType type, MemorySegment d, long dOff, MemorySegment x, long xOff, double a,
            MemorySegment y, long yOff, double b, long bytes) {
        switch (type) {
            case FLOAT32 -> {
                long step = F.vectorByteSize();
                long end = bytes - bytes % step;
                float fa = (float) a;
                float fb = (float) b;
                for (long o = 0; o < end; o += step) {
                    FloatVector.fromMemorySegment(F, x, xOff + o, NATIVE).mul(fa)
                            .add(FloatVector.fromMemorySegment(F, y, yOff + o, NATIVE).mul(fb))
                            .intoMemorySegment(d, dOff + o, NATIVE);
                }
                return end;
            }
            case FLOAT64 -> {
                long step = D.vectorByteSize();
                long end = bytes - bytes % step;
                for (long o = 0; o < end; o += step) {
                    DoubleVector.fromMemorySegment(D, x, xOff + o, NATIVE).mul(a)
                            .add(DoubleVector.fromMemorySegment(D, y, yOff + o, NATIVE).mul(b))
                            .intoMemorySegment(d, dOff + o, NATIVE);
                }
                return end;
            }
            case BFLOAT16 -> {
                // A fold scales one operand (the input) and not the other (a partial sum): that case has its loop.
                return b == 1 ? bf16ScaledSum(d, dOff, x, xOff, (float) a, y, yOff, bytes)
                        : a == 1 ? bf16ScaledSum(d, dOff, y, yOff, (float) b, x, xOff, bytes)
                        : bf16ScaledSum(d, dOff, x, xOff, (float) a, y, yOff, (float) b, bytes);
            }
            default -> {
                return 0;
            }
        }
    }

    /** {@code d = bf16(a * x) + y} for bfloat16, rounded to bfloat16. */
    private static long bf16ScaledSum(MemorySegment d, long dOff, MemorySegment x, long xOff, float a, MemorySegment y,
            long yOff, long bytes) {
        long step = I.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            IntVector p = IntVector.fromMemorySegment(I, x, xOff + o, NATIVE);
            IntVector q = IntVector.fromMemorySegment(I, y, yOff + o, NATIVE);
            packBf16(bf16Rounded(lowBf16(p).mul(a)).add(lowBf16(q)), bf16Rounded(highBf16(p).mul(a)).add(highBf16(q)))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    /** {@code d = bf16(a * x) + bf16(b * y)} for bfloat16, rounded to bfloat16. */
    private static long bf16ScaledSum(MemorySegment d, long dOff, MemorySegment x, long xOff, float a, MemorySegment y,
            long yOff, float b, long bytes) {
        long step = I.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            IntVector p = IntVector.fromMemorySegment(I, x, xOff + o, NATIVE);
            IntVector q = IntVector.fromMemorySegment(I, y, yOff + o, NATIVE);
            packBf16(bf16Rounded(lowBf16(p).mul(a)).add(bf16Rounded(lowBf16(q).mul(b))),
                    bf16Rounded(highBf16(p).mul(a)).add(bf16Rounded(highBf16(q).mul(b))))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long f32Sum(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = F.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            FloatVector.fromMemorySegment(F, x, xOff + o, NATIVE)
                    .add(FloatVector.fromMemorySegment(F, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long f32Prod(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = F.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            FloatVector.fromMemorySegment(F, x, xOff + o, NATIVE)
                    .mul(FloatVector.fromMemorySegment(F, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long f32Min(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = F.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            FloatVector.fromMemorySegment(F, x, xOff + o, NATIVE)
                    .min(FloatVector.fromMemorySegment(F, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long f32Max(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = F.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            FloatVector.fromMemorySegment(F, x, xOff + o, NATIVE)
                    .max(FloatVector.fromMemorySegment(F, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long f64Sum(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = D.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            DoubleVector.fromMemorySegment(D, x, xOff + o, NATIVE)
                    .add(DoubleVector.fromMemorySegment(D, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long f64Prod(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = D.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            DoubleVector.fromMemorySegment(D, x, xOff + o, NATIVE)
                    .mul(DoubleVector.fromMemorySegment(D, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long f64Min(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = D.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            DoubleVector.fromMemorySegment(D, x, xOff + o, NATIVE)
                    .min(DoubleVector.fromMemorySegment(D, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long f64Max(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = D.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            DoubleVector.fromMemorySegment(D, x, xOff + o, NATIVE)
                    .max(DoubleVector.fromMemorySegment(D, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long i32Sum(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = I.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            IntVector.fromMemorySegment(I, x, xOff + o, NATIVE).add(IntVector.fromMemorySegment(I, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long i32Prod(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = I.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            IntVector.fromMemorySegment(I, x, xOff + o, NATIVE).mul(IntVector.fromMemorySegment(I, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long i32Min(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = I.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            IntVector.fromMemorySegment(I, x, xOff + o, NATIVE).min(IntVector.fromMemorySegment(I, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long i32Max(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = I.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            IntVector.fromMemorySegment(I, x, xOff + o, NATIVE).max(IntVector.fromMemorySegment(I, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long i64Sum(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = L.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            LongVector.fromMemorySegment(L, x, xOff + o, NATIVE)
                    .add(LongVector.fromMemorySegment(L, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long i64Prod(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = L.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            LongVector.fromMemorySegment(L, x, xOff + o, NATIVE)
                    .mul(LongVector.fromMemorySegment(L, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long i64Min(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = L.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            LongVector.fromMemorySegment(L, x, xOff + o, NATIVE)
                    .min(LongVector.fromMemorySegment(L, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long i64Max(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = L.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            LongVector.fromMemorySegment(L, x, xOff + o, NATIVE)
                    .max(LongVector.fromMemorySegment(L, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long i8Sum(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = B.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            ByteVector.fromMemorySegment(B, x, xOff + o, NATIVE)
                    .add(ByteVector.fromMemorySegment(B, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long i8Prod(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = B.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            ByteVector.fromMemorySegment(B, x, xOff + o, NATIVE)
                    .mul(ByteVector.fromMemorySegment(B, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long i8Min(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = B.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            ByteVector.fromMemorySegment(B, x, xOff + o, NATIVE)
                    .min(ByteVector.fromMemorySegment(B, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long i8Max(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = B.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            ByteVector.fromMemorySegment(B, x, xOff + o, NATIVE)
                    .max(ByteVector.fromMemorySegment(B, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long u8Min(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = B.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            ByteVector.fromMemorySegment(B, x, xOff + o, NATIVE)
                    .lanewise(VectorOperators.UMIN, ByteVector.fromMemorySegment(B, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long u8Max(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = B.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            ByteVector.fromMemorySegment(B, x, xOff + o, NATIVE)
                    .lanewise(VectorOperators.UMAX, ByteVector.fromMemorySegment(B, y, yOff + o, NATIVE))
                    .intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    // bfloat16: an int lane holds two elements; the low element is (bits << 16), the high one
    // (bits & 0xffff0000) as float bits. Both halves are handled alike, so byte order does not matter.
    private static final int HIGH = 0xffff0000;

    /** Rounds float bits to bfloat16 to nearest-even, the result in the upper 16 bits (as Half.floatToBfloat16). */
    private static IntVector roundBf16(FloatVector r) {
        IntVector bits = r.reinterpretAsInts();
        IntVector rounded = bits.add(bits.lanewise(VectorOperators.LSHR, 16).and(1)).add(0x7fff);
        VectorMask<Integer> nan = bits.and(0x7fffffff).compare(VectorOperators.GT, 0x7f800000);
        return rounded.blend(bits.or(0x00400000), nan).and(HIGH);
    }

    /** The floats rounded to bfloat16 (nearest-even, NaN quiet), still as floats. */
    private static FloatVector bf16Rounded(FloatVector v) {
        return roundBf16(v).reinterpretAsFloats();
    }

    private static IntVector packBf16(FloatVector low, FloatVector high) {
        return roundBf16(high).or(roundBf16(low).lanewise(VectorOperators.LSHR, 16));
    }

    private static FloatVector lowBf16(IntVector v) {
        return v.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    private static FloatVector highBf16(IntVector v) {
        return v.and(HIGH).reinterpretAsFloats();
    }

    private static long bf16Sum(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = I.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            IntVector p = IntVector.fromMemorySegment(I, x, xOff + o, NATIVE);
            IntVector q = IntVector.fromMemorySegment(I, y, yOff + o, NATIVE);
            packBf16(lowBf16(p).add(lowBf16(q)), highBf16(p).add(highBf16(q))).intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long bf16Prod(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = I.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            IntVector p = IntVector.fromMemorySegment(I, x, xOff + o, NATIVE);
            IntVector q = IntVector.fromMemorySegment(I, y, yOff + o, NATIVE);
            packBf16(lowBf16(p).mul(lowBf16(q)), highBf16(p).mul(highBf16(q))).intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long bf16Min(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = I.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            IntVector p = IntVector.fromMemorySegment(I, x, xOff + o, NATIVE);
            IntVector q = IntVector.fromMemorySegment(I, y, yOff + o, NATIVE);
            packBf16(lowBf16(p).min(lowBf16(q)), highBf16(p).min(highBf16(q))).intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    private static long bf16Max(MemorySegment d, long dOff, MemorySegment x, long xOff, MemorySegment y,
            long yOff, long bytes) {
        long step = I.vectorByteSize();
        long end = bytes - bytes % step;
        for (long o = 0; o < end; o += step) {
            IntVector p = IntVector.fromMemorySegment(I, x, xOff + o, NATIVE);
            IntVector q = IntVector.fromMemorySegment(I, y, yOff + o, NATIVE);
            packBf16(lowBf16(p).max(lowBf16(q)), highBf16(p).max(highBf16(q))).intoMemorySegment(d, dOff + o, NATIVE);
        }
        return end;
    }

    // bfloat16 <-> float32 conversions (Conversions): a short vector of half the int vector's bits holds as many
    // lanes, so one int vector of float bits narrows to one short vector, and back.
    private static final VectorSpecies<Short> HALF_SHORTS =
            VectorSpecies.of(short.class, VectorShape.forBitSize(I.vectorBitSize() / 2));

    /** dst (bfloat16) = src (float32) rounded, on a prefix of {@code count}; returns the elements done. */
    static long narrowBf16(MemorySegment src, MemorySegment dst, long count) {
        int step = I.length();
        long end = count - count % step;
        for (long i = 0; i < end; i += step) {
            FloatVector x = FloatVector.fromMemorySegment(F, src, 4 * i, NATIVE);
            roundBf16(x).lanewise(VectorOperators.LSHR, 16).convertShape(VectorOperators.I2S, HALF_SHORTS, 0)
                    .intoMemorySegment(dst, 2 * i, NATIVE);
        }
        return end;
    }

    private static FloatVector widenBf16(MemorySegment src, long i) {
        return ((IntVector) ShortVector.fromMemorySegment(HALF_SHORTS, src, 2 * i, NATIVE)
                .convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    /** dst (float32) = src (bfloat16) widened, on a prefix of {@code count}; returns the elements done. */
    static long widenBf16(MemorySegment src, MemorySegment dst, long count) {
        int step = I.length();
        long end = count - count % step;
        for (long i = 0; i < end; i += step) {
            widenBf16(src, i).intoMemorySegment(dst, 4 * i, NATIVE);
        }
        return end;
    }

    /** acc (float32) = acc op src (bfloat16, widened), on a prefix of {@code count}; returns the elements done. */
    static long accumulateBf16(ReduceOp op, MemorySegment src, MemorySegment acc, long count) {
        VectorOperators.Binary lanewise = switch (op) {
            case SUM, AVG -> VectorOperators.ADD;
            case PROD -> VectorOperators.MUL;
            case MIN -> VectorOperators.MIN;
            case MAX -> VectorOperators.MAX;
        };
        int step = I.length();
        long end = count - count % step;
        for (long i = 0; i < end; i += step) {
            FloatVector.fromMemorySegment(F, acc, 4 * i, NATIVE).lanewise(lanewise, widenBf16(src, i))
                    .intoMemorySegment(acc, 4 * i, NATIVE);
        }
        return end;
    }
}
