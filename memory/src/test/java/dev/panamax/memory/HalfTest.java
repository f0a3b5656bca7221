package dev.panamax.memory;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** float16 / bfloat16 conversions against {@link Reference}, with the round-to-nearest-even edge cases. */
class HalfTest {
    private static String hex(int bits) {
        return String.format("0x%04x", bits & 0xffff);
    }

    @Test
    void float16DecodesEveryBitPatternExactly() {
        for (int h = 0; h < 0x10000; h++) {
            float want = Reference.f16ToFloat((short) h), got = Half.float16ToFloat((short) h);
            if (Float.isNaN(want)) {
                assertTrue(Float.isNaN(got), hex(h));
            } else {
                assertEquals(Float.floatToRawIntBits(want), Float.floatToRawIntBits(got), hex(h));
                assertEquals(h, Half.floatToFloat16(got) & 0xffff, "round trip " + hex(h));
            }
        }
    }

    @Test
    void bfloat16DecodesEveryBitPatternExactly() {
        for (int h = 0; h < 0x10000; h++) {
            float got = Half.bfloat16ToFloat((short) h);
            assertEquals(h << 16, Float.floatToRawIntBits(got), hex(h));
            if (!Float.isNaN(got)) {
                assertEquals(h, Half.floatToBfloat16(got) & 0xffff, "round trip " + hex(h));
            }
        }
    }

    /** Every midpoint between neighbouring finite float16 values rounds to the even one; a float ulp either side rounds
     * to the nearer. */
    @Test
    void float16HalfwayCasesRoundToEven() {
        for (int h = 0; h < 0x7bff; h++) {
            for (int sign : new int[]{0, 0x8000}) {
                float lo = Half.float16ToFloat((short) (h | sign)), hi = Half.float16ToFloat((short) ((h + 1) | sign));
                float mid = (float) (((double) lo + hi) / 2); // exact: 12 significant bits
                int even = (h & 1) == 0 ? h : h + 1;
                assertEquals(even | sign, Half.floatToFloat16(mid) & 0xffff, "midpoint of " + hex(h | sign));
                assertEquals(h | sign, Half.floatToFloat16(sign == 0 ? Math.nextDown(mid) : Math.nextUp(mid)) & 0xffff,
                        "below midpoint " + hex(h));
                assertEquals((h + 1) | sign, Half.floatToFloat16(sign == 0 ? Math.nextUp(mid) : Math.nextDown(mid))
                        & 0xffff, "above midpoint " + hex(h));
            }
        }
    }

    @Test
    void float16SubnormalsInfinityNaNAndOverflow() {
        assertEquals(0x0001, Half.floatToFloat16(0x1p-24f));          // smallest subnormal
        assertEquals(0x0000, Half.floatToFloat16(0x1p-25f));          // halfway to it: ties to even (zero)
        assertEquals(0x0001, Half.floatToFloat16(Math.nextUp(0x1p-25f)));
        assertEquals(0x0003, Half.floatToFloat16(3 * 0x1p-24f));
        assertEquals(0x0002, Half.floatToFloat16(2.5f * 0x1p-24f));   // tie between 2 and 3 -> 2
        assertEquals(0x0004, Half.floatToFloat16(3.5f * 0x1p-24f));   // tie between 3 and 4 -> 4
        assertEquals(0x03ff, Half.floatToFloat16(0x3ffp-24f));        // largest subnormal
        assertEquals(0x0400, Half.floatToFloat16(0x1p-14f));          // smallest normal
        assertEquals(0x8000, Half.floatToFloat16(-0f) & 0xffff);
        assertEquals(0x8000, Half.floatToFloat16(-0x1p-26f) & 0xffff); // underflows to -0
        assertEquals(0x7bff, Half.floatToFloat16(65504f));            // max finite
        assertEquals(0x7bff, Half.floatToFloat16(Math.nextDown(65520f)));
        assertEquals(0x7c00, Half.floatToFloat16(65520f));            // halfway to 65536: ties to even = infinity
        assertEquals(0x7c00, Half.floatToFloat16(1e6f));
        assertEquals(0x7c00, Half.floatToFloat16(Float.MAX_VALUE));
        assertEquals(0xfc00, Half.floatToFloat16(-65520f) & 0xffff);
        assertEquals(0x7c00, Half.floatToFloat16(Float.POSITIVE_INFINITY));
        assertEquals(0xfc00, Half.floatToFloat16(Float.NEGATIVE_INFINITY) & 0xffff);
        assertTrue(Reference.isF16NaN(Half.floatToFloat16(Float.NaN)));
        // NaN payload only in low bits stays NaN
        assertTrue(Reference.isF16NaN(Half.floatToFloat16(Float.intBitsToFloat(0x7f800001))));
        assertTrue(Float.isNaN(Half.float16ToFloat((short) 0x7e00)));
        assertEquals(Float.POSITIVE_INFINITY, Half.float16ToFloat((short) 0x7c00));
        assertEquals(0x1p-24f, Half.float16ToFloat((short) 1));
    }

    @Test
    void bfloat16HalfwayCasesSubnormalsInfinityNaNAndOverflow() {
        assertEquals(0x3f80, Half.floatToBfloat16(Float.intBitsToFloat(0x3f808000))); // tie, 0x3f80 even: down
        assertEquals(0x3f82, Half.floatToBfloat16(Float.intBitsToFloat(0x3f818000))); // tie, 0x3f81 odd: up
        assertEquals(0x3f81, Half.floatToBfloat16(Float.intBitsToFloat(0x3f808001))); // above tie: up
        assertEquals(0x3f80, Half.floatToBfloat16(Float.intBitsToFloat(0x3f807fff))); // below tie: down
        assertEquals(0xbf82, Half.floatToBfloat16(Float.intBitsToFloat(0xbf818000)) & 0xffff);
        assertEquals(0x0000, Half.floatToBfloat16(Float.intBitsToFloat(0x00008000))); // subnormal tie to zero
        assertEquals(0x0002, Half.floatToBfloat16(Float.intBitsToFloat(0x00018000))); // subnormal tie up to even
        assertEquals(0x0001, Half.floatToBfloat16(Float.intBitsToFloat(0x00008001)));
        // largest subnormal rounds to MIN_NORMAL
        assertEquals(0x0080, Half.floatToBfloat16(Float.intBitsToFloat(0x007fffff)));
        assertEquals(0x7f7f, Half.floatToBfloat16(Float.intBitsToFloat(0x7f7f7fff))); // max finite bfloat16
        assertEquals(0x7f80, Half.floatToBfloat16(Float.intBitsToFloat(0x7f7f8000))); // tie above max: infinity
        assertEquals(0x7f80, Half.floatToBfloat16(Float.MAX_VALUE));
        assertEquals(0xff80, Half.floatToBfloat16(-Float.MAX_VALUE) & 0xffff);
        assertEquals(0x7f80, Half.floatToBfloat16(Float.POSITIVE_INFINITY));
        assertEquals(0x8000, Half.floatToBfloat16(-0f) & 0xffff);
        assertTrue(Reference.isBf16NaN(Half.floatToBfloat16(Float.NaN)));
        // would round to infinity if treated as a number
        short n = Half.floatToBfloat16(Float.intBitsToFloat(0x7f800001));
        assertTrue(Reference.isBf16NaN(n), hex(n));
        short neg = Half.floatToBfloat16(Float.intBitsToFloat(0xffffffff));
        assertTrue(Reference.isBf16NaN(neg) && neg < 0, "negative NaN keeps its sign: " + hex(neg));
    }

    @Test
    void randomFloatsMatchTheReference() {
        SplittableRandom rnd = new SplittableRandom(1);
        for (int i = 0; i < 2_000_000; i++) {
            float f = Float.intBitsToFloat(rnd.nextInt());
            if (Float.isNaN(f)) {
                continue;
            }
            assertEquals(Reference.floatToF16(f), Half.floatToFloat16(f), "float16 of " + f);
            assertEquals(Reference.floatToBf16(f), Half.floatToBfloat16(f), "bfloat16 of " + f);
            float g = (float) ((rnd.nextDouble() - 0.5) * 140000); // dense in the float16 range
            assertEquals(Reference.floatToF16(g), Half.floatToFloat16(g), "float16 of " + g);
        }
    }
}
