package dev.panamax.verbs;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class AccessTest {

    @Test
    void flagsHaveTheValuesOfEnumIbvAccessFlags() {
        assertEquals(1, Access.LOCAL_WRITE);
        assertEquals(2, Access.REMOTE_WRITE);
        assertEquals(4, Access.REMOTE_READ);
        assertEquals(8, Access.REMOTE_ATOMIC);
        assertEquals(16, Access.MW_BIND);
        assertEquals(32, Access.ZERO_BASED);
        assertEquals(64, Access.ON_DEMAND);
        assertEquals(128, Access.HUGETLB);
        assertEquals(1 << 20, Access.RELAXED_ORDERING);
        assertEquals(7, Access.ALL_REMOTE);
    }

    @Test
    void optionalRangeIsBits20To29() {
        assertEquals(0x3FF0_0000, Access.OPTIONAL_RANGE);
        assertEquals(Access.RELAXED_ORDERING, Access.RELAXED_ORDERING & Access.OPTIONAL_RANGE);
        assertEquals(0, Access.ALL_REMOTE & Access.OPTIONAL_RANGE);
    }

    @Test
    void flagsInWords() {
        assertEquals("LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ", Access.toString(Access.ALL_REMOTE));
        assertEquals("REMOTE_READ|RELAXED_ORDERING", Access.toString(Access.REMOTE_READ | Access.RELAXED_ORDERING));
        assertEquals("0", Access.toString(0));
        assertEquals("LOCAL_WRITE|0x80000000", Access.toString(Access.LOCAL_WRITE | 0x8000_0000));
    }
}
