package dev.panamax.lightgbm;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.collectives.PeerFailedException;
import dev.panamax.lightgbm.ElasticLightGbm.Recovery;
import dev.panamax.lightgbm.ElasticLightGbm.Result;
import dev.panamax.lightgbm.PanamaxLightGbm.Checkpoint;
import dev.panamax.lightgbm.PanamaxLightGbm.IterationListener;
import dev.panamax.lightgbm.PanamaxLightGbm.Network;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.IntFunction;

import static dev.panamax.lightgbm.PanamaxLightGbmTest.PARAMS;
import static dev.panamax.lightgbm.PanamaxLightGbmTest.TIMEOUT;
import static dev.panamax.lightgbm.PanamaxLightGbmTest.part;
import static dev.panamax.lightgbm.PanamaxLightGbmTest.trees;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link ElasticLightGbm} with ranks as threads: a model continued from a checkpoint is the model
 * trained without a break (on both networks); a lost rank is left behind and the survivors end with the model
 * that LightGBM's own network trains from the same checkpoint over their rows; errors that a recovery cannot mend
 * end the training on every rank.
 */
class ElasticLightGbmTest {
    private static final int ITERATIONS = 8;

    /** Trains on {@code n} in-JVM ranks, rank r with {@code data.apply(r)}, from {@code from}; every rank's model. */
    private static List<String> train(int n, IntFunction<PanamaxLightGbm.LocalData> data, int iterations,
            Checkpoint from, Network network) {
        List<Communicator> comms = Panamax.local(n, TIMEOUT.toNanos());
        try {
            return RankThreads.onEach(comms, c -> PanamaxLightGbm.train(c, PARAMS, data.apply(c.rank()), iterations,
                    (i, nanos, booster) -> { }, network, from));
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    /** What one rank of an elastic run ends with: its result, or what it threw. */
    private record Outcome(Result result, RuntimeException failure) {
    }

    /**
     * Elastic training on {@code n} in-JVM ranks, rank r with part r of n and {@code listeners.apply(rank)} (which
     * gets the rank's original communicator); closes every communicator, those the recoveries made too.
     */
    private static List<Outcome> trainElastic(int n, int maxRecoveries,
            BiFunction<Integer, Communicator, IterationListener> listeners) {
        List<Communicator> comms = Panamax.local(n, TIMEOUT.toNanos());
        List<Communicator> made = new ArrayList<>();
        try {
            List<Outcome> outcomes = RankThreads.onEach(comms, c -> {
                try {
                    return new Outcome(ElasticLightGbm.train(c, PARAMS, part(c.rank(), n), ITERATIONS,
                            maxRecoveries, listeners.apply(c.rank(), c)), null);
                } catch (RuntimeException e) {
                    return new Outcome(null, e);
                }
            });
            for (Outcome o : outcomes) {
                if (o.result() != null && !comms.contains(o.result().communicator())) {
                    made.add(o.result().communicator());
                }
            }
            return outcomes;
        } finally {
            RankThreads.closeAll(made);
            RankThreads.closeAll(comms);
        }
    }

    private static final IterationListener NOTHING = (i, nanos, booster) -> { };

    @Test
    void aModelContinuedFromACheckpointIsTheModelTrainedWithoutABreak() {
        // LightGBM's own way to continue a model (init scores and merged trees) loses nothing: over Panamax and
        // over LightGBM's sockets, 3 iterations then 5 more give the trees of 8 at once.
        for (Network network : Network.values()) {
            List<String> whole = train(3, r -> part(r, 3), ITERATIONS, Checkpoint.NONE, network);
            String first = train(3, r -> part(r, 3), 3, Checkpoint.NONE, network).getFirst();
            List<String> continued = train(3, r -> part(r, 3), ITERATIONS, new Checkpoint(first, 3), network);
            for (int r = 0; r < 3; r++) {
                assertEquals(trees(whole.getFirst()), trees(continued.get(r)), network + ", rank " + r);
            }
            assertNotEquals(trees(whole.getFirst()), trees(first), "the checkpoint has fewer trees");
        }
    }

    @Test
    void withoutAFailureElasticTrainingTrainsTheModelOfTrain() {
        List<Outcome> outcomes = trainElastic(3, 2, (r, c) -> NOTHING);
        String expected = train(3, r -> part(r, 3), ITERATIONS, Checkpoint.NONE, Network.PANAMAX).getFirst();
        for (Outcome o : outcomes) {
            assertEquals(expected, o.result().model());
            assertEquals(List.of(), o.result().recoveries());
            assertEquals(3, o.result().communicator().size(), "the communicator it was given");
        }
    }

    @Test
    void survivorsOfALostRankEndWithTheModelLightGbmContinuesOverTheirRows() {
        // Rank 2 of 4 is lost (its communicator aborted) after iteration 3; the survivors resume from the most
        // iterations any of them finished (3, or 2 when the loss cut the end of iteration 3 short for all).
        int lost = 2;
        List<Outcome> outcomes = trainElastic(4, 2, (r, c) -> (i, nanos, booster) -> {
            if (r == lost && i == 3) {
                c.abort();
                throw new IllegalStateException("rank " + lost + " is lost");
            }
        });
        assertEquals("rank 2 is lost", outcomes.get(lost).failure().getMessage());
        Outcome first = outcomes.getFirst();
        assertEquals(1, first.result().recoveries().size(), "one recovery: " + first.result().recoveries());
        Recovery recovery = first.result().recoveries().getFirst();
        assertEquals(List.of(lost), recovery.lostRanks());
        assertEquals(4, recovery.fromSize());
        assertEquals(3, recovery.toSize());
        int k = recovery.iteration();
        assertTrue(k == 3 || k == 2, "resumed after " + k + " iterations");
        for (int r : new int[] {0, 1, 3}) {
            Result result = outcomes.get(r).result();
            assertEquals(first.result().model(), result.model(), "the same model on rank " + r);
            assertEquals(k, result.recoveries().getFirst().iteration());
            assertEquals(r < lost ? r : r - 1, result.communicator().rank());
        }
        // The reference, trained by LightGBM's own network: k iterations on the 4 parts, continued to the end on
        // the survivors' parts.
        String checkpoint = train(4, r -> part(r, 4), k, Checkpoint.NONE, Network.LIGHTGBM_SOCKETS).getFirst();
        int[] survivorParts = {0, 1, 3};
        String expected = train(3, r -> part(survivorParts[r], 4), ITERATIONS, new Checkpoint(checkpoint, k),
                Network.LIGHTGBM_SOCKETS).getFirst();
        assertEquals(trees(expected), trees(first.result().model()));
        String uninterrupted = train(4, r -> part(r, 4), ITERATIONS, Checkpoint.NONE, Network.PANAMAX).getFirst();
        assertNotEquals(trees(uninterrupted), trees(first.result().model()), "rank 2's rows left the training");
    }

    @Test
    void anErrorThatARecoveryCannotMendEndsTrainingOnEveryRank() {
        List<Outcome> outcomes = trainElastic(3, 2, (r, c) -> (i, nanos, booster) -> {
            if (r == 1 && i == 2) {
                throw new IllegalStateException("the listener of rank 1 failed");
            }
        });
        assertEquals("the listener of rank 1 failed", outcomes.get(1).failure().getMessage());
        for (int r : new int[] {0, 2}) {
            RuntimeException e = outcomes.get(r).failure();
            assertInstanceOf(IllegalStateException.class, e, "rank " + r);
            assertTrue(e.getMessage().contains("another rank failed with an error that a recovery cannot mend"),
                    e.getMessage());
        }
    }

    @Test
    void withNoRecoveriesLeftTheSurvivorsThrowTheLoss() {
        List<Outcome> outcomes = trainElastic(3, 0, (r, c) -> (i, nanos, booster) -> {
            if (r == 2 && i == 2) {
                c.abort();
                throw new IllegalStateException("rank 2 is lost");
            }
        });
        for (int r : new int[] {0, 1}) {
            RuntimeException e = outcomes.get(r).failure();
            assertInstanceOf(LightGbmNetworkException.class, e, "rank " + r + ": " + e);
            assertInstanceOf(PeerFailedException.class, e.getCause(), "rank " + r);
        }
    }

    @Test
    void argumentsAreChecked() {
        List<Communicator> comms = Panamax.local(1, TIMEOUT.toNanos());
        try {
            Communicator c = comms.getFirst();
            assertThrows(IllegalArgumentException.class,
                    () -> ElasticLightGbm.train(c, PARAMS, part(0, 1), 2, -1, NOTHING));
            assertThrows(IllegalArgumentException.class,
                    () -> ElasticLightGbm.train(c, PARAMS + " num_machines=2", part(0, 1), 2, 1, NOTHING));
            Result alone = ElasticLightGbm.train(c, PARAMS, part(0, 1), 2, 1, NOTHING);
            assertSame(c, alone.communicator());
            assertTrue(alone.model().contains("Tree=1\n"), "2 trees");
            Result none = ElasticLightGbm.train(c, PARAMS, part(0, 1), 0, 1, NOTHING);
            assertTrue(!none.model().contains("Tree="), "no trees");
        } finally {
            RankThreads.closeAll(comms);
        }
        assertEquals("a=1 b=2", ElasticLightGbm.withoutMachineCount(" a=1 num_machines=4 b=2 num_machine=4"));
    }
}
