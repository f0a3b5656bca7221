package dev.panamax.verbs;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class VerbsExceptionTest {

    @Test
    void errnoFailuresNameTheVerbTheErrnoAndStrerror() {
        VerbsException e = VerbsException.errno("ibv_reg_mr", 14, "registering 4096 bytes at 0x1000");
        assertEquals("ibv_reg_mr", e.verb());
        assertEquals(14, e.code());
        assertEquals("ibv_reg_mr failed: errno 14 EFAULT (Bad address); registering 4096 bytes at 0x1000",
                e.getMessage());
    }

    @Test
    void returnedErrorNumbersArePositiveWhateverTheirSign() {
        VerbsException e = VerbsException.returned("ibv_modify_qp", 22, "queue pair 17 INIT -> RTR");
        assertEquals(22, e.code());
        assertEquals("ibv_modify_qp failed: returned 22 EINVAL (Invalid argument); queue pair 17 INIT -> RTR",
                e.getMessage());
        VerbsException negative = VerbsException.returned("ibv_post_send", -12, null);
        assertEquals(12, negative.code());
        assertEquals("ibv_post_send failed: returned -12 ENOMEM (Cannot allocate memory)", negative.getMessage());
        VerbsException minusOne = VerbsException.returned("ibv_query_gid", -1, "port 1");
        assertEquals(-1, minusOne.code());
        assertEquals("ibv_query_gid failed: returned -1; port 1", minusOne.getMessage());
    }

    @Test
    void unnamedErrnosKeepTheirNumberAndText() {
        VerbsException e = VerbsException.errno("ibv_create_cq", 61, null); // ENODATA
        assertEquals("ibv_create_cq failed: errno 61 (No data available)", e.getMessage());
    }

    @Test
    void timeoutsNameTheQueue() {
        VerbsTimeoutException e = new VerbsTimeoutException("completion queue 3 of rxe0", 250_000_000L);
        assertEquals("ibv_poll_cq: no completion on completion queue 3 of rxe0 within 250 ms", e.getMessage());
        assertEquals(250_000_000L, e.timeoutNanos());
        assertEquals(110, e.code()); // ETIMEDOUT
    }
}
