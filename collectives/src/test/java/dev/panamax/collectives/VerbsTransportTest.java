package dev.panamax.collectives;

import dev.panamax.collectives.algorithms.Algorithms;
import dev.panamax.memory.DataType;
import dev.panamax.memory.ReduceOp;
import dev.panamax.testing.RankThreads;
import dev.panamax.testing.RdmaTest;
import dev.panamax.verbs.Verbs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The transport contract suite run over RDMA: the same bodies as for local, shm and TCP, with
 * {@link Ranks.Transport#VERBS}. Needs an RDMA device (the rxe VM of {@code scripts/rdma/rdma-tests});
 * skipped with the reason elsewhere.
 */
@RdmaTest
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

    private long startNanos;

    /** The VM is slow: say what runs, so that a long test can be told from a stuck one in its console. */
    @BeforeEach
    void announce(TestInfo test) {
        startNanos = System.nanoTime();
        System.err.println("VerbsTransportTest: " + test.getDisplayName() + " ...");
    }

    @AfterEach
    void report(TestInfo test) {
        System.err.printf("VerbsTransportTest: %s took %.1f s%n", test.getDisplayName(),
                (System.nanoTime() - startNanos) / 1e9);
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

    /**
     * The contract suite's checks on a grid trimmed for an emulated machine (the rxe VM runs without
     * hardware acceleration): every collective, every type with SUM, every op with float32 and
     * int32, counts 0, 1, 2, n-1, 13 and one past the staging chunk and the direct thresholds.
     */
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {1, 3, 4})
    void everyCollectiveMatchesTheReference(int n) {
        List<Communicator> comms = Ranks.Transport.VERBS.open(n);
        List<String> failures = Collections.synchronizedList(new ArrayList<>());
        try {
            RankThreads.run(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    for (long count : new long[] {0, 1, Math.max(0, n - 1), 13, 4099}) {
                        for (DataType type : DataType.values()) {
                            for (ReduceOp op : ReduceOp.values()) {
                                // Every type once, every operator on float32.
                                if ((op == ReduceOp.SUM && count <= 13) || type == DataType.FLOAT32) {
                                    CollectiveContractTest.allReduce(c, arena, count, type, op, failures);
                                    CollectiveContractTest.reduceScatter(c, arena, count, type, op, failures);
                                    CollectiveContractTest.reduce(c, arena, count, type, op, failures);
                                }
                            }
                            if (count <= 13 || type == DataType.FLOAT32) {
                                CollectiveContractTest.allGather(c, arena, count, type, failures);
                                CollectiveContractTest.broadcast(c, arena, count, type, failures);
                                PointToPointTest.allToAll(c, arena, count, type, failures);
                            }
                        }
                    }
                    c.barrier();
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
        assertEquals(List.of(), failures.size() > 10 ? failures.subList(0, 10) : failures);
    }

    /** One large all-reduce per type: many staging chunks in flight, zero-copy pieces of user buffers. */
    @Test
    void largeAllReduceMatchesTheReference() {
        List<Communicator> comms = Ranks.Transport.VERBS.open(3);
        List<String> failures = Collections.synchronizedList(new ArrayList<>());
        try {
            RankThreads.run(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    // 1.2 MB per rank: several staging chunks and a zero-copy piece per ring step.
                    CollectiveContractTest.allReduce(c, arena, 300_007, DataType.FLOAT32, ReduceOp.SUM, failures);
                    CollectiveContractTest.allGather(c, arena, 100_003, DataType.FLOAT64, failures);
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
        assertEquals(List.of(), failures.size() > 10 ? failures.subList(0, 10) : failures);
    }

    static List<String> algorithms() {
        return Algorithms.names();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("algorithms")
    void everyAlgorithmMatchesTheReference(String algorithm) {
        // The algorithms themselves are proven on every transport; here each one's traffic crosses RDMA.
        AlgorithmContractTest.check(algorithm, Ranks.Transport.VERBS, 4, new long[] {13, 70_001},
                (type, op) -> type == DataType.FLOAT32 && (op == ReduceOp.SUM || op == ReduceOp.MAX));
    }

    /** With zero copy off, every byte goes through the staging chunks: the other half of the data path. */
    @ParameterizedTest(name = "{0} ranks")
    @ValueSource(ints = {3})
    void stagingOnlyMatchesTheReference(int n) {
        System.setProperty("panamax.verbs.zeroCopy", "false");
        try {
            List<Communicator> comms = Ranks.Transport.VERBS.open(n);
            List<String> failures = Collections.synchronizedList(new ArrayList<>());
            try {
                RankThreads.run(comms, c -> {
                    try (Arena arena = Arena.ofConfined()) {
                        for (long count : new long[] {0, 1, 13, 65_537, 150_001}) {
                            for (DataType type : new DataType[] {DataType.FLOAT32, DataType.INT64}) {
                                CollectiveContractTest.allReduce(c, arena, count, type, ReduceOp.SUM, failures);
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
        } finally {
            System.clearProperty("panamax.verbs.zeroCopy");
        }
    }

    /**
     * One stream of point-to-point messages on both sides of the eager size (8 KiB by default): a burst of 40 eager
     * ones, more than the receiver's 16 eager slots, sent before the receiver posts any receive (the sender waits
     * for credit), then eager and advertised ones alternating (each side must meet its n-th message). With the eager
     * path off (0) and at its largest (64 KiB), the same stream; and with nothing sent inline (0), the default
     * (messages of up to 64 ints inline) and the most a setting may ask for. The sender writes the next message into
     * the same buffer as soon as a send returns, which an inline send does before the adapter has written it.
     */
    @ParameterizedTest(name = "eager bytes {0}, inline bytes {1}")
    @CsvSource({"8192, 256", "0, 256", "65536, 256", "8192, 0", "8192, 1024"})
    void eagerAndAdvertisedMessagesStayInOrder(String eagerBytes, String inlineBytes) {
        System.setProperty("panamax.verbs.eagerBytes", eagerBytes);
        System.setProperty("panamax.verbs.inlineBytes", inlineBytes);
        try {
            long[] mixed = {1, 2048, 2049, 3, 70_001, 16_384, 16_385, 7};
            long[] counts = new long[40 + 3 * mixed.length];
            for (int i = 0; i < counts.length; i++) {
                counts[i] = i < 40 ? 1 + (i * 97L) % 2048 : mixed[(i - 40) % mixed.length];
            }
            List<Communicator> comms = Ranks.Transport.VERBS.open(2);
            try {
                RankThreads.run(comms, c -> {
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment buffer = arena.allocate(4 * 70_001, 64);
                        if (c.rank() == 1) {
                            Thread.sleep(300); // the burst arrives before any receive is posted
                        }
                        for (int i = 0; i < counts.length; i++) {
                            if (c.rank() == 0) {
                                for (int j = 0; j < counts[i]; j++) {
                                    buffer.setAtIndex(ValueLayout.JAVA_INT, j, i * 1_000_003 + j);
                                }
                                c.send(buffer, counts[i], DataType.INT32, 1);
                            } else {
                                buffer.fill((byte) 0);
                                c.recv(buffer, counts[i], DataType.INT32, 0);
                                for (int j = 0; j < counts[i]; j++) {
                                    assertEquals(i * 1_000_003 + j, buffer.getAtIndex(ValueLayout.JAVA_INT, j),
                                            "message " + i + " of " + counts[i] + " ints, element " + j);
                                }
                            }
                        }
                    }
                });
            } finally {
                RankThreads.closeAll(comms);
            }
        } finally {
            System.clearProperty("panamax.verbs.eagerBytes");
            System.clearProperty("panamax.verbs.inlineBytes");
        }
    }

    /**
     * Rank 0 sends 17 eager messages, one more than the eager slots, and then waits for a large one from rank 1,
     * which takes only 3 before sending it: rank 0 must get the 3 slots back before a batch of 8 is taken (it asks),
     * or both wait for each other until the timeout.
     */
    @Test
    void aSenderOutOfEagerSlotsGetsBackWhatTheReceiverTook() {
        List<Communicator> comms = Ranks.Transport.VERBS.open(2, Duration.ofSeconds(10));
        try {
            RankThreads.run(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment small = arena.allocate(64, 64);
                    MemorySegment large = arena.allocate(4 * 70_001, 64);
                    if (c.rank() == 0) {
                        for (int i = 0; i < 17; i++) {
                            small.setAtIndex(ValueLayout.JAVA_INT, 0, i);
                            c.send(small, 16, DataType.INT32, 1);
                        }
                        c.recv(large, 70_001, DataType.INT32, 1);
                        assertEquals(70_000, large.getAtIndex(ValueLayout.JAVA_INT, 70_000));
                    } else {
                        for (int i = 0; i < 17; i++) {
                            if (i == 3) {
                                large.setAtIndex(ValueLayout.JAVA_INT, 70_000, 70_000);
                                c.send(large, 70_001, DataType.INT32, 0);
                            }
                            c.recv(small, 16, DataType.INT32, 0);
                            assertEquals(i, small.getAtIndex(ValueLayout.JAVA_INT, 0), "message " + i);
                        }
                    }
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    /**
     * An eager message that meets a receive of another size fails that receive, naming the mismatch: both small
     * enough for a footer (found by reading memory), a message with one meeting a receive too large for one, and a
     * message without one meeting a receive small enough (the receiver, reading footers, still polls its completions
     * now and then).
     */
    @ParameterizedTest(name = "sent {0} floats, expected {1}")
    @CsvSource({"25, 50", "25, 500", "500, 25"})
    void anEagerMessageOfTheWrongSizeIsReported(int sent, int expected) {
        List<Communicator> comms = Ranks.Transport.VERBS.open(2, Duration.ofSeconds(5));
        try {
            Throwable thrown = assertThrows(Throwable.class, () -> RankThreads.run(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment buffer = arena.allocate(4000, 64);
                    if (c.rank() == 0) {
                        c.send(buffer, sent, DataType.FLOAT32, 1);
                    } else {
                        c.recv(buffer, expected, DataType.FLOAT32, 0);
                    }
                }
            }));
            assertTrue(thrown instanceof CollectiveException, () -> "got " + thrown);
            String mismatch = "rank 0 sent " + 4 * sent + " bytes but rank 1 expects " + 4 * expected
                    + " (mismatched counts";
            assertTrue(thrown.getMessage().contains(mismatch), thrown::getMessage);
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    /**
     * A ping-pong of 300 round trips whose sizes step through 1 to 75 ints, across the largest message with a footer
     * (62 ints with the default 256 inline bytes), the largest inline one and the next: rank 1 sends each message
     * back with every element plus one, so both directions carry footers, sizes that are no multiple of 8 bytes
     * and every slot many times; the sender rewrites its buffer as soon as a send returns.
     */
    @Test
    void aPingPongAcrossTheFooterSizeArrivesWhole() {
        List<Communicator> comms = Ranks.Transport.VERBS.open(2);
        try {
            RankThreads.run(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment buffer = arena.allocate(4 * 75, 64);
                    for (int i = 0; i < 300; i++) {
                        int n = 1 + i % 75;
                        if (c.rank() == 0) {
                            for (int j = 0; j < n; j++) {
                                buffer.setAtIndex(ValueLayout.JAVA_INT, j, i * 1000 + j);
                            }
                            c.send(buffer, n, DataType.INT32, 1);
                            buffer.fill((byte) 0);
                            c.recv(buffer, n, DataType.INT32, 1);
                            for (int j = 0; j < n; j++) {
                                assertEquals(i * 1000 + j + 1, buffer.getAtIndex(ValueLayout.JAVA_INT, j),
                                        "reply " + i + " of " + n + " ints, element " + j);
                            }
                        } else {
                            buffer.fill((byte) 0);
                            c.recv(buffer, n, DataType.INT32, 0);
                            for (int j = 0; j < n; j++) {
                                int v = buffer.getAtIndex(ValueLayout.JAVA_INT, j);
                                assertEquals(i * 1000 + j, v, "message " + i + " of " + n + " ints, element " + j);
                                buffer.setAtIndex(ValueLayout.JAVA_INT, j, v + 1);
                            }
                            c.send(buffer, n, DataType.INT32, 0);
                            buffer.fill((byte) 0x5A);
                        }
                    }
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    /**
     * 150 times a large message (advertised; its last write ends in a completion) and right behind it a small one
     * (found by its footer, which may be read before that completion is polled): the small one must wait for the
     * large one's receive rather than meet it as a mismatch.
     */
    @Test
    void aSmallMessageRightBehindALargeOneMeetsItsOwnReceive() {
        List<Communicator> comms = Ranks.Transport.VERBS.open(2);
        try {
            RankThreads.run(comms, c -> {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment large = arena.allocate(4 * 70_001, 64);
                    MemorySegment small = arena.allocate(64, 64);
                    for (int i = 0; i < 150; i++) {
                        if (c.rank() == 0) {
                            large.setAtIndex(ValueLayout.JAVA_INT, 70_000, i);
                            small.setAtIndex(ValueLayout.JAVA_INT, 2, -i);
                            c.send(large, 70_001, DataType.INT32, 1);
                            c.send(small, 3, DataType.INT32, 1);
                        } else {
                            c.recv(large, 70_001, DataType.INT32, 0);
                            c.recv(small, 3, DataType.INT32, 0);
                            assertEquals(i, large.getAtIndex(ValueLayout.JAVA_INT, 70_000), "large message " + i);
                            assertEquals(-i, small.getAtIndex(ValueLayout.JAVA_INT, 2), "small message " + i);
                        }
                    }
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    /** A rank waiting long for a straggler sleeps on the completion channel, and the straggler's message wakes it. */
    @ParameterizedTest
    @EnumSource(StragglerWaits.Pattern.class)
    void aRankWaitingForAStragglerSleepsUntilACompletionWakesIt(StragglerWaits.Pattern pattern) throws Exception {
        StragglerWaits.check(Ranks.Transport.VERBS, pattern);
    }

    @Test
    void pointToPointAndSplit() {
        new PointToPointTest().allToAllAndRingOfSends(Ranks.Transport.VERBS);
        new PointToPointTest().splitFormsSubCommunicatorsOverTheParentsLinks(Ranks.Transport.VERBS);
    }

    /** Eager messages (inline and not), sent and received through recycled requests. */
    @Test
    void aPingPongOfSmallMessagesAllocatesAlmostNothing() throws Exception {
        SmallCallAllocationTest.pingPongAllocatesAlmostNothing(Ranks.Transport.VERBS, 2, 20_000, 5_000);
        SmallCallAllocationTest.pingPongAllocatesAlmostNothing(Ranks.Transport.VERBS, 256, 20_000, 5_000);
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

    /** The 16-bit wire's all-reduce and the pre-multiplied sum, on a grid trimmed as above. */
    @Test
    void wireTypeAndPreMultipliedSums() {
        long[] counts = {0, 1, 3, 4099};
        WireTypeAllReduceTest.grid(Ranks.Transport.VERBS, new int[] {1, 3, 4}, counts);
        PreMulSumTest.grid(Ranks.Transport.VERBS, new int[] {1, 3, 4}, counts);
    }

    @Test
    void revokeAgreeAndShrink() throws Exception {
        ElasticTest e = new ElasticTest();
        e.revokeFailsEveryRankPromptlyAndShrinkRebuildsThemAll(Ranks.Transport.VERBS);
        e.survivorsOfALostRankAgreeOnItAndShrinkToDenseRanks(Ranks.Transport.VERBS);
    }

    /** Rank processes (each its own device context and registrations): communicator and plain Arena buffers. */
    @Test
    void rankProcessesAllReduce() throws Exception {
        // Rank JVMs start slowly in the emulated VM (the first processes of a run most): a longer rendezvous.
        MultiProcessTest.processesAllReduce(3, "verbs", "shared", 3, 70_001, 240);
        MultiProcessTest.processesAllReduce(2, "verbs", "user", 3, 70_001, 240);
    }

    /**
     * Two rank processes with different eager sizes (8192 and 64 bytes) use the smaller: an all-reduce of 4000
     * bytes, whose messages fit the one but not the other, only completes when both sides agree on each message.
     */
    @Test
    void rankProcessesWithDifferentEagerSizesUseTheSmaller() throws Exception {
        MultiProcessTest.processesAllReduce(2, "verbs", "shared", 3, 1000, 240,
                r -> Map.of("PANAMAX_VERBS_EAGER_BYTES", r == 0 ? "8192" : "64"));
    }

    @Test
    void aKilledRankFailsEveryOtherRankNamingIt() throws Exception {
        // Four JVMs start slowly in the emulated VM: a longer timeout (it also bounds connecting).
        MultiProcessTest.killedRank("verbs", 60, 300);
    }
}
