package dev.panamax.collectives;

import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The collectives over TCP with other numbers of one-way connections per direction than the default one
 * ({@code panamax.tcp.dataConnections}; the contract suite runs the default): none, where every message shares
 * one connection both ways, and two, which split every message of 512 KiB and more. The contract suite's checks
 * at counts whose messages are split unevenly, on an odd and an even number of ranks.
 */
class TcpConnectionsTest {
    @ParameterizedTest(name = "{0} ranks, {1} one-way connections per direction")
    @CsvSource({"3, 2", "4, 0"})
    void collectivesMatchTheReference(int n, int dataConnections) {
        List<Communicator> comms;
        System.setProperty("panamax.tcp.dataConnections", Integer.toString(dataConnections));
        try {
            comms = Ranks.Transport.TCP.open(n);
        } finally {
            System.clearProperty("panamax.tcp.dataConnections");
        }
        List<String> failures = Collections.synchronizedList(new ArrayList<>());
        try {
            RankThreads.run(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    for (long count : new long[]{65_537, CollectiveContractTest.LARGE}) {
                        for (DataType type : new DataType[]{DataType.FLOAT32, DataType.FLOAT64, DataType.INT8}) {
                            CollectiveContractTest.allReduce(c, arena, count, type, ReduceOp.SUM, failures);
                            CollectiveContractTest.reduceScatter(c, arena, count, type, ReduceOp.MAX, failures);
                            CollectiveContractTest.reduce(c, arena, count, type, ReduceOp.SUM, failures);
                            CollectiveContractTest.allGather(c, arena, count, type, failures);
                            CollectiveContractTest.broadcast(c, arena, count, type, failures);
                        }
                    }
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
        assertEquals(List.of(), failures.size() > 10 ? failures.subList(0, 10) : failures);
    }
}
