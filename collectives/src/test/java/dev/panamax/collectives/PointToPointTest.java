package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import dev.panamax.testing.Reference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** All-to-all, send/recv and split, on every transport. */
class PointToPointTest {

    /** Rank r's block q, element j, holds input(r, q*count + j); rank q must find it as its block r. */
    static void allToAll(Communicator c, Arena arena, long count, DataType type, List<String> failures) {
        int n = c.size();
        long e = type.byteSize();
        MemorySegment send = arena.allocate(Math.max(1, n * count * e), 64);
        MemorySegment recv = arena.allocate(Math.max(1, n * count * e), 64);
        Reference.fill(send, 0, n * count, c.rank(), type, ReduceOp.SUM);
        c.allToAll(send, recv, count, type);
        for (int r = 0; r < n; r++) {
            for (long j = 0; j < count; j++) {
                double want = type.getAsDouble(CollectiveContractTest.valueSegment(r, c.rank() * count + j, type), 0,
                        0);
                double got = type.getAsDouble(recv, r * count * e, j);
                if (got != want) {
                    failures.add("alltoall rank " + c.rank() + "/" + n + " count " + count + " " + type.canonicalName()
                            + ": block " + r + " element " + j + " is " + got + ", expected " + want);
                    return;
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = Ranks.Transport.class, names = {"LOCAL", "SHM", "TCP"})
    void allToAllAndRingOfSends(Ranks.Transport transport) {
        if (!Ranks.selected(transport)) {
            return;
        }
        int n = 3;
        List<Communicator> comms = transport.open(n);
        List<String> failures = Collections.synchronizedList(new ArrayList<>());
        try {
            RankThreads.run(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    for (long count : new long[] {0, 1, 5, 100_003}) {
                        allToAll(c, arena, count, DataType.FLOAT64, failures);
                    }
                    // each rank sends to its right neighbour and receives from its left, twice: FIFO order per pair
                    int right = (c.rank() + 1) % n;
                    int left = (c.rank() + n - 1) % n;
                    MemorySegment out = arena.allocate(8 * 1000, 8);
                    MemorySegment in = arena.allocate(8 * 1000, 8);
                    for (int round = 0; round < 2; round++) {
                        for (int i = 0; i < 1000; i++) {
                            out.setAtIndex(ValueLayout.JAVA_LONG, i, c.rank() * 1_000_000L + round * 1000 + i);
                        }
                        if (c.rank() % 2 == 0) {
                            c.send(out, 1000, DataType.INT64, right);
                            c.recv(in, 1000, DataType.INT64, left);
                        } else {
                            c.recv(in, 1000, DataType.INT64, left);
                            c.send(out, 1000, DataType.INT64, right);
                        }
                        for (int i = 0; i < 1000; i++) {
                            long want = left * 1_000_000L + round * 1000 + i;
                            if (in.getAtIndex(ValueLayout.JAVA_LONG, i) != want) {
                                failures.add("recv rank " + c.rank() + " round " + round + " element " + i);
                                break;
                            }
                        }
                    }
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
        assertEquals(List.of(), failures);
    }

    @Test
    void badPointToPointArgumentsAreNamed() {
        List<Communicator> comms = Panamax.local(2);
        try (Arena a = Arena.ofConfined()) {
            Communicator c = comms.get(0);
            MemorySegment buf = a.allocate(64, 8);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> c.send(buf, 1,
                    DataType.INT64, 0));
            assertTrue(e.getMessage().contains("itself"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> c.recv(buf, 1, DataType.INT64, 5));
            assertTrue(e.getMessage().contains("peer 5"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> c.send(buf, 100, DataType.INT64, 1));
            assertTrue(e.getMessage().contains("buffer"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> c.allToAll(buf, buf, 2, DataType.INT64));
            assertTrue(e.getMessage().contains("in-place"), e.getMessage());
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    /**
     * MPI_Comm_split semantics: even and odd ranks form two communicators ordered by descending
     * key; rank 0 opts out with UNDEFINED; collectives on the parts and the parent interleave.
     */
    @ParameterizedTest
    @EnumSource(value = Ranks.Transport.class, names = {"LOCAL", "SHM", "TCP"})
    void splitFormsSubCommunicatorsOverTheParentsLinks(Ranks.Transport transport) {
        if (!Ranks.selected(transport)) {
            return;
        }
        int n = 5;
        List<Communicator> comms = transport.open(n);
        List<String> failures = Collections.synchronizedList(new ArrayList<>());
        try {
            RankThreads.run(comms, c -> {
                int color = c.rank() == 0 ? Communicator.UNDEFINED : c.rank() % 2;
                Communicator sub = c.split(color, -c.rank());
                if (c.rank() == 0) {
                    if (sub != null) {
                        failures.add("rank 0 passed UNDEFINED but got a communicator");
                    }
                } else {
                    // odd: {1, 3} -> by descending key: 3, 1; even: {2, 4} -> 4, 2
                    int expectedSize = 2;
                    int expectedRank = c.rank() >= 3 ? 0 : 1;
                    if (sub.size() != expectedSize || sub.rank() != expectedRank) {
                        failures.add("rank " + c.rank() + ": sub rank " + sub.rank() + "/" + sub.size());
                    }
                    try (Arena a = Arena.ofShared()) {
                        MemorySegment v = a.allocate(8, 8);
                        v.set(ValueLayout.JAVA_LONG, 0, c.rank());
                        sub.allReduce(v, 1, DataType.INT64, ReduceOp.SUM);
                        long want = c.rank() % 2 == 1 ? 1 + 3 : 2 + 4;
                        if (v.get(ValueLayout.JAVA_LONG, 0) != want) {
                            failures.add("rank " + c.rank() + ": sub all-reduce gave "
                                    + v.get(ValueLayout.JAVA_LONG, 0));
                        }
                    }
                }
                try (Arena a = Arena.ofShared()) {
                    MemorySegment v = a.allocate(8, 8);
                    v.set(ValueLayout.JAVA_LONG, 0, 1);
                    c.allReduce(v, 1, DataType.INT64, ReduceOp.SUM);
                    if (v.get(ValueLayout.JAVA_LONG, 0) != n) {
                        failures.add("rank " + c.rank() + ": parent all-reduce after split gave "
                                + v.get(ValueLayout.JAVA_LONG, 0));
                    }
                }
                if (sub != null) {
                    sub.close();
                    sub.close();
                }
                c.barrier();
            });
        } finally {
            RankThreads.closeAll(comms);
        }
        assertEquals(List.of(), failures);
    }
}
