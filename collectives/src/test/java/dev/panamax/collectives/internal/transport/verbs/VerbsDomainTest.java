package dev.panamax.collectives.internal.transport.verbs;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The verbs settings that are read before a device is opened (needs no RDMA device). */
class VerbsDomainTest {
    @AfterEach
    void clear() {
        System.clearProperty("panamax.verbs.eagerBytes");
        System.clearProperty("panamax.verbs.inlineBytes");
    }

    @Test
    void theEagerSizeDefaultsTo8KiB() {
        assertEquals(8192, VerbsDomain.eagerBytes());
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "1", "65536"})
    void anEagerSizeFrom0To64KiBIsTaken(String bytes) {
        System.setProperty("panamax.verbs.eagerBytes", bytes);
        assertEquals(Integer.parseInt(bytes), VerbsDomain.eagerBytes());
    }

    @ParameterizedTest
    @ValueSource(strings = {"-1", "65537", "8k", "1e3"})
    void anotherEagerSizeFailsNamingTheSetting(String bytes) {
        System.setProperty("panamax.verbs.eagerBytes", bytes);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, VerbsDomain::eagerBytes);
        assertTrue(e.getMessage().contains("PANAMAX_VERBS_EAGER_BYTES"), e::getMessage);
        assertTrue(e.getMessage().contains("'" + bytes + "'"), e::getMessage);
    }

    @Test
    void theInlineSizeDefaultsTo256Bytes() {
        assertEquals(256, VerbsDomain.inlineBytes());
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "8", "1024"})
    void anInlineSizeFrom0To1KiBIsTaken(String bytes) {
        System.setProperty("panamax.verbs.inlineBytes", bytes);
        assertEquals(Integer.parseInt(bytes), VerbsDomain.inlineBytes());
    }

    @ParameterizedTest
    @ValueSource(strings = {"-1", "1025", "all"})
    void anotherInlineSizeFailsNamingTheSetting(String bytes) {
        System.setProperty("panamax.verbs.inlineBytes", bytes);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, VerbsDomain::inlineBytes);
        assertTrue(e.getMessage().contains("PANAMAX_VERBS_INLINE_BYTES"), e::getMessage);
        assertTrue(e.getMessage().contains("'" + bytes + "'"), e::getMessage);
    }
}
