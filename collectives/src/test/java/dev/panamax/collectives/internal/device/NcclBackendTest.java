package dev.panamax.collectives.internal.device;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.cuda.NcclUniqueId;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import java.util.function.Function;

/**
 * The host side of the NCCL backend's set-up, which needs no GPU: the agreement on whether every
 * rank can load libnccl, and the unique id travelling from rank 0 over the host communicator.
 */
class NcclBackendTest {
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(20);

    private static <T> List<T> onRanks(int n, Function<Communicator, T> body) {
        List<Communicator> host = Panamax.local(n, TIMEOUT_NANOS);
        try {
            return DeviceScheduleExecutorTest.onEachRank(n, r -> body.apply(host.get(r)));
        } finally {
            host.forEach(Communicator::close);
        }
    }

    @Test
    void everyRankFailsNamingTheRanksWithoutNccl() {
        UnsatisfiedLinkError cause = new UnsatisfiedLinkError("libnccl.so.2: cannot open shared object file");
        List<RuntimeException> failures = onRanks(4, c -> {
            boolean available = c.rank() != 1 && c.rank() != 3;
            try {
                NcclBackend.requireOnEveryRank(c, available, available ? null : cause);
                return null;
            } catch (RuntimeException e) {
                return e;
            }
        });
        for (int r = 0; r < 4; r++) {
            RuntimeException e = failures.get(r);
            assertInstanceOf(IllegalStateException.class, e, "rank " + r);
            assertTrue(e.getMessage().startsWith("rank " + r
                    + ": the NCCL backend needs libnccl.so.2 on every rank; rank(s) [1, 3]"),
                    e.getMessage());
            if (r == 1 || r == 3) {
                assertTrue(e.getMessage().endsWith("cannot load it: libnccl.so.2: cannot open shared object file"),
                        e.getMessage());
                assertSame(cause, e.getCause());
            }
        }
    }

    @Test
    void nothingFailsWhenEveryRankHasNccl() {
        assertEquals(Arrays.asList(null, null, null), onRanks(3, c -> {
            NcclBackend.requireOnEveryRank(c, true, null);
            return null;
        }));
    }

    @Test
    void rankZerosIdReachesEveryRank() {
        byte[] id = new byte[NcclUniqueId.BYTE_SIZE];
        for (int i = 0; i < id.length; i++) {
            id[i] = (byte) (i * 37 + 11);
        }
        List<NcclUniqueId> got = onRanks(3, c -> NcclBackend.shareId(c, () -> {
            if (c.rank() != 0) {
                throw new AssertionError("rank " + c.rank() + " made an id");
            }
            return new NcclUniqueId(id);
        }));
        for (NcclUniqueId u : got) {
            assertArrayEquals(id, u.bytes());
        }
    }

    @Test
    void anIdRankZeroCannotMakeFailsEveryRank() {
        List<RuntimeException> failures = onRanks(3, c -> {
            try {
                NcclBackend.shareId(c, () -> {
                    throw new IllegalStateException("ncclGetUniqueId: ncclSystemError (2)");
                });
                return null;
            } catch (RuntimeException e) {
                return e;
            }
        });
        for (int r = 0; r < 3; r++) {
            String m = failures.get(r).getMessage();
            assertTrue(m.startsWith("rank " + r + ": rank 0 could not make the NCCL unique id"), m);
            if (r == 0) {
                assertTrue(m.endsWith(": ncclGetUniqueId: ncclSystemError (2)"), m);
            } else {
                assertNull(failures.get(r).getCause());
            }
        }
    }
}
