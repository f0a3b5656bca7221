package dev.panamax.lightgbm;

import dev.panamax.collectives.Communicator;
import dev.panamax.collectives.Panamax;
import dev.panamax.testing.RankThreads;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.function.IntFunction;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link PanamaxLightGbm#train}: ranks as threads. The model equals the one LightGBM's own socket network
 * trains from the same partitions; inputs that do not fit together fail on every rank, before LightGBM runs.
 */
class PanamaxLightGbmTest {
    static final Duration TIMEOUT = Duration.ofSeconds(60);
    static final BinaryData DATA = BinaryData.generate(11, 3000, 7);
    static final String PARAMS = "objective=binary num_leaves=7 min_data_in_leaf=20 num_threads=1 verbose=-1"
            + " deterministic=true force_row_wise=true seed=3";

    static PanamaxLightGbm.LocalData part(int rank, int ranks) {
        BinaryData p = DATA.part(rank, ranks);
        return new PanamaxLightGbm.LocalData(p.features(), p.rows(), p.cols(), p.labels());
    }

    /** Trains on {@code ranks} in-JVM ranks, rank r with {@code data.apply(r)} and {@code params.apply(r)}. */
    static List<String> train(int ranks, IntFunction<PanamaxLightGbm.LocalData> data, IntFunction<String> params,
            PanamaxLightGbm.Network network) {
        List<Communicator> comms = Panamax.local(ranks, TIMEOUT.toNanos());
        try {
            return RankThreads.onEach(comms, c -> PanamaxLightGbm.train(c, params.apply(c.rank()),
                    data.apply(c.rank()), 8, (i, nanos, booster) -> { }, network));
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    /** Each rank's failure message ("none" when it trained). */
    static List<String> failures(int ranks, IntFunction<PanamaxLightGbm.LocalData> data, IntFunction<String> params) {
        List<Communicator> comms = Panamax.local(ranks, TIMEOUT.toNanos());
        try {
            return RankThreads.onEach(comms, c -> {
                try {
                    PanamaxLightGbm.train(c, params.apply(c.rank()), data.apply(c.rank()), 2);
                    return "none";
                } catch (IllegalArgumentException e) {
                    return e.getMessage();
                }
            });
        } finally {
            RankThreads.closeAll(comms);
        }
    }

    static void assertEveryRankFailed(List<String> failures, String expected) {
        for (int r = 0; r < failures.size(); r++) {
            assertTrue(failures.get(r).contains(expected), "rank " + r + ": " + failures.get(r));
        }
    }

    @Test
    void threeRanksTrainTheModelThatLightGbmsOwnNetworkTrains() {
        List<String> panamax = train(3, r -> part(r, 3), r -> PARAMS, PanamaxLightGbm.Network.PANAMAX);
        List<String> sockets = train(3, r -> part(r, 3), r -> PARAMS, PanamaxLightGbm.Network.LIGHTGBM_SOCKETS);
        for (int r = 0; r < 3; r++) {
            assertEquals(panamax.getFirst(), panamax.get(r), "the same model on rank " + r);
        }
        assertEquals(trees(sockets.getFirst()), trees(panamax.getFirst()), "the same trees as over LightGBM's sockets");
        assertTrue(panamax.getFirst().contains("Tree=7\n"), "8 trees");
        assertTrue(panamax.getFirst().contains("[tree_learner: data]"), "trained data-parallel");
    }

    @Test
    void oneRankTrainsSerially() {
        String model = train(1, r -> part(0, 1), r -> PARAMS, PanamaxLightGbm.Network.PANAMAX).getFirst();
        assertTrue(model.contains("[tree_learner: serial]"), "no network on one rank");
        assertTrue(model.contains("Tree=7\n"), "8 trees");
    }

    @Test
    void differentFeatureCountsFailOnEveryRankNamingThem() {
        BinaryData narrow = BinaryData.generate(11, 1000, 6);
        assertEveryRankFailed(failures(3,
                r -> r == 2 ? new PanamaxLightGbm.LocalData(narrow.features(), 1000, 6, narrow.labels()) : part(r, 3),
                r -> PARAMS), "different numbers of feature columns (rank 0: 7, rank 1: 7, rank 2: 6 (differs))");
    }

    @Test
    void differentParametersFailOnEveryRank() {
        assertEveryRankFailed(failures(2, r -> part(r, 2), r -> r == 1 ? PARAMS + " num_leaves=15" : PARAMS),
                "the parameters of rank(s) 1 differ from rank 0's");
    }

    @Test
    void aRankWithoutRowsFailsBeforeTraining() {
        assertEveryRankFailed(failures(2,
                r -> r == 1 ? new PanamaxLightGbm.LocalData(new double[0], 0, 7, new float[0]) : part(0, 2),
                r -> PARAMS), "rank(s) 1 have no rows");
    }

    @Test
    void theDistributedParametersAreAddedUnlessGiven() {
        assertEquals("a=1 tree_learner=data pre_partition=true num_machines=4",
                PanamaxLightGbm.distributedParameters("a=1", 4));
        assertEquals("tree_learner=voting num_machines=4 pre_partition=false",
                PanamaxLightGbm.distributedParameters("tree_learner=voting num_machines=4 pre_partition=false", 4));
        assertEquals("a=1", PanamaxLightGbm.distributedParameters(" a=1 ", 1));
        IllegalArgumentException wrong = assertThrows(IllegalArgumentException.class,
                () -> PanamaxLightGbm.distributedParameters("num_machines=3", 4));
        assertTrue(wrong.getMessage().contains("num_machines=3 but the communicator has 4 ranks"), wrong.getMessage());
        assertThrows(IllegalArgumentException.class, () -> PanamaxLightGbm.distributedParameters("verbose", 2));
    }

    @Test
    void localDataChecksItsShape() {
        assertThrows(IllegalArgumentException.class, () -> new PanamaxLightGbm.LocalData(new double[5], 2, 3,
                new float[2]));
        assertThrows(IllegalArgumentException.class, () -> new PanamaxLightGbm.LocalData(new double[6], 2, 3,
                new float[3]));
        assertThrows(IllegalArgumentException.class, () -> new PanamaxLightGbm.LocalData(new double[0], 0, 0,
                new float[0]));
    }

    /** The model text up to the parameters section (which may differ in settings that do not shape trees). */
    static String trees(String model) {
        int end = model.indexOf("\nparameters:");
        return end < 0 ? model : model.substring(0, end);
    }
}
