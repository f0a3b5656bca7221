package dev.panamax.collectives;

import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.verbs.Verbs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The transport contract suite run over RDMA: the same bodies as for local, shm and TCP, with
 * {@link Ranks.Transport#VERBS}. Needs an RDMA device (the rxe VM of {@code scripts/rdma-tests});
 * skipped with the reason elsewhere.
 */
@Tag("rdma")
class VerbsTransportTest {
    private static String previousTransports;

    @BeforeAll
    static void needsAnRdmaDevice() {
        assumeTrue(Verbs.isAvailable(), () -> "libibverbs: " + Verbs.unavailabilityCause());
        assumeTrue(!Verbs.devices().isEmpty(), "no RDMA device");
        // The shared bodies run only for selected transports; VERBS is selected only when named.
        previousTransports = System.getProperty("panamax.test.transports");
        System.setProperty("panamax.test.transports", "VERBS");
    }

    @AfterAll
    static void restore() {
        if (previousTransports == null) {
            System.clearProperty("panamax.test.transports");
        } else {
            System.setProperty("panamax.test.transports", previousTransports);
        }
        System.clearProperty("panamax.verbs.zeroCopy");
    }

    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {1, 2, 3, 4})
    void everyCollectiveMatchesTheReference(int n) {
        new CollectiveContractTest().everyCollectiveMatchesTheReference(Ranks.Transport.VERBS, n);
    }

    @Test
    void midSizeAllReduceMatchesTheReference() {
        new CollectiveContractTest().midSizeAllReduceMatchesTheReference(Ranks.Transport.VERBS, 3);
    }

    static List<String> algorithms() {
        return Algorithms.names();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("algorithms")
    void everyAlgorithmMatchesTheReference(String algorithm) {
        AlgorithmContractTest.check(algorithm, Ranks.Transport.VERBS, 4, new long[] {1, 13, 70_001});
    }

    /** With zero copy off, every byte goes through the staging chunks: the other half of the data path. */
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {2, 3})
    void stagingOnlyMatchesTheReference(int n) {
        System.setProperty("panamax.verbs.zeroCopy", "false");
        try {
            List<Communicator> comms = Ranks.Transport.VERBS.open(n);
            List<String> failures = Collections.synchronizedList(new ArrayList<>());
            try {
                Ranks.run(comms, c -> {
                    try (Arena arena = Arena.ofConfined()) {
                        for (long count : new long[] {0, 1, 13, 65_537, 300_007}) {
                            for (DataType type : new DataType[] {DataType.FLOAT32, DataType.INT64, DataType.FLOAT64}) {
                                CollectiveContractTest.allReduce(c, arena, count, type, ReduceOp.SUM, failures);
                                CollectiveContractTest.allGather(c, arena, count, type, failures);
                                CollectiveContractTest.broadcast(c, arena, count, type, failures);
                            }
                        }
                    }
                });
            } finally {
                Ranks.closeAll(comms);
            }
            assertEquals(List.of(), failures.size() > 10 ? failures.subList(0, 10) : failures);
        } finally {
            System.clearProperty("panamax.verbs.zeroCopy");
        }
    }

    @Test
    void pointToPointAndSplit() {
        new PointToPointTest().allToAllAndRingOfSends(Ranks.Transport.VERBS);
        new PointToPointTest().splitFormsSubCommunicatorsOverTheParentsLinks(Ranks.Transport.VERBS);
    }

    @Test
    void failuresBecomeErrors() {
        FailureTest f = new FailureTest();
        f.mismatchedCountsAreReported(Ranks.Transport.VERBS);
        f.aSilentPeerTimesOutNamingTheStepAndPeer(Ranks.Transport.VERBS);
        f.aClosedPeerFailsTheOthers(Ranks.Transport.VERBS);
    }

    @Test
    void validationAndAbort() throws Exception {
        new ValidationTest().mismatchedCallsFailOnEveryRankAndLeaveTheCommunicatorUsable(Ranks.Transport.VERBS);
        new AbortTest().abortWakesABlockedCallAtOnceAndThePeersNameThisRank(Ranks.Transport.VERBS);
    }

    @Test
    void fourProcessesAllReduce() throws Exception {
        new MultiProcessTest().fourProcessesAllReduce("verbs");
    }

    @Test
    void aKilledRankFailsEveryOtherRankNamingIt() throws Exception {
        new MultiProcessTest().aKilledRankFailsEveryOtherRankNamingIt("verbs");
    }
}
